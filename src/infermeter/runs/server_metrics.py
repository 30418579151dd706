"""Scrape the endpoints' Prometheus ``/metrics`` during a run; store the time series.

``probe`` asks each metrics URL once before the run: an endpoint that does
not answer (or exports no known metric) is left out with one info line and
the run goes on unchanged. ``Scraper`` then reads every URL each
``interval_s`` on its own thread, stamping scrapes with the run's clock, and
``write`` stores ``server_metrics.json`` in the run folder (format in
docs/design.md), times relative to the start of the performance phase.
"""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from infermeter.clock import Clock
from infermeter.runs.metrics_catalogue import BY_KEY, parse_samples, read_series

FILE = "server_metrics.json"
LABEL = "the servers' own Prometheus metrics, scraped during the run"
TIMEOUT_S = 2.0


def metrics_url(base_url: str) -> str:
    """``http://h:8000/v1`` -> ``http://h:8000/metrics`` (vLLM, SGLang, TGI serve it there)."""
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}/metrics"


def _fetch(url: str) -> dict[str, tuple[str, float]]:
    with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
        text = resp.read().decode("utf-8", "replace")
    return read_series(parse_samples(text))


def probe(urls: list[str]) -> tuple[list[str], list[str]]:
    """(URLs that export known metrics, one info line per URL left out)."""
    good, notes = [], []
    for url in urls:
        try:
            found = _fetch(url)
        except urllib.error.HTTPError as exc:
            notes.append(f"no server metrics from {url} (HTTP {exc.code}); run goes on")
            continue
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            notes.append(f"no server metrics from {url} ({reason}); run goes on")
            continue
        if not found:
            notes.append(
                f"{url} answered but exports none of the known metrics "
                "(docs/endpoints.md lists them); run goes on without them"
            )
            continue
        good.append(url)
    return good, notes


@dataclass
class _Track:
    metric: str
    t_ns: list[int] = field(default_factory=list)
    values: list[float] = field(default_factory=list)


class Scraper:
    """Reads every URL each ``interval_s`` on a daemon thread until ``stop``."""

    def __init__(self, urls: list[str], clock: Clock, interval_s: float = 1.0) -> None:
        self.urls, self.clock, self.interval_s = urls, clock, interval_s
        self.scrapes = [0] * len(urls)
        self.errors = [0] * len(urls)
        self._tracks: dict[tuple[int, str], _Track] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name="infermeter-metrics", daemon=True
        )

    def start(self) -> Scraper:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(TIMEOUT_S * len(self.urls) + 5)
        self.scrape_once()  # the state at the end of the run

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.scrape_once()
            self._stop.wait(self.interval_s)

    def scrape_once(self) -> None:
        for i, url in enumerate(self.urls):
            at = self.clock.now_ns()
            try:
                found = _fetch(url)
            except (OSError, ValueError):
                self.errors[i] += 1
                continue
            self.scrapes[i] += 1
            for key, (metric, value) in found.items():
                track = self._tracks.setdefault((i, key), _Track(metric))
                track.t_ns.append(at)
                track.values.append(value)

    def document(self, start_ns: int, replicas: list[str]) -> dict[str, Any]:
        """The ``server_metrics.json`` document; times in s from ``start_ns``.

        ``replicas``: the endpoints' base URLs, to name each source's replica.
        """
        series = []
        for (i, key), track in sorted(self._tracks.items()):
            meta = BY_KEY[key]
            values = track.values
            if meta.counter:  # the change since the first scrape
                values = [v - values[0] for v in values]
            series.append(
                {
                    "key": key,
                    "title": meta.title,
                    "unit": meta.unit,
                    "counter": meta.counter,
                    "source": i,
                    "metric": track.metric,
                    "t_s": [round((t - start_ns) / 1e9, 4) for t in track.t_ns],
                    "values": [round(v, 6) for v in values],
                }
            )
        # A source is a replica's when it is that replica's own /metrics; other
        # URLs (a DCGM exporter, a router) belong to none.
        owner = {metrics_url(u): u for u in replicas}
        return {
            "label": LABEL,
            "interval_s": self.interval_s,
            "sources": [
                {
                    "url": url,
                    "replica": owner.get(url),
                    "scrapes": self.scrapes[i],
                    "errors": self.errors[i],
                }
                for i, url in enumerate(self.urls)
            ],
            "series": series,
        }


def write(folder: Path, document: dict[str, Any]) -> Path:
    path = folder / FILE
    path.write_text(
        json.dumps(document, separators=(",", ":")) + "\n", encoding="utf-8"
    )
    return path


def summary(document: dict[str, Any]) -> dict[str, Any]:
    """run.json's ``server_metrics`` block: where the series are and what they hold."""
    return {
        "file": FILE,
        "label": LABEL,
        "sources": document["sources"],
        "series": sorted({s["key"] for s in document["series"]}),
    }


def endpoint_urls(sut: object, options: dict[str, str]) -> list[str]:
    """The base URL of each replica the SUT sends to (none for local SUTs)."""
    urls = getattr(sut, "urls", None)
    if isinstance(urls, list | tuple) and urls:
        return [str(u) for u in urls]
    return [u for u in options.get("url", "").split(",") if u.strip()]


def start(
    asked: list[str] | None,
    sut: object,
    options: dict[str, str],
    clock: Clock,
    interval_s: float,
) -> tuple[Scraper | None, list[str]]:
    """A running scraper (or None) and the info lines of what was left out.

    ``asked`` None: each endpoint's own ``/metrics``, where it answers;
    an empty list: no scraping.
    """
    if asked is not None and not asked:
        return None, []
    urls = (
        asked
        if asked is not None
        else [metrics_url(u) for u in endpoint_urls(sut, options)]
    )
    if not urls:
        return None, []
    good, notes = probe(urls)
    if not good:
        return None, notes
    return Scraper(good, clock, interval_s).start(), notes


def finish(
    scraper: Scraper, folder: Path, start_ns: int, replicas: list[str]
) -> dict[str, Any]:
    """Write the series into the run folder; run.json's ``server_metrics`` block."""
    document = scraper.document(start_ns, replicas)
    write(folder, document)
    return summary(document)
