"""Cost per token from a dated price table (derived figures, not MLPerf metrics).

``$ / Mtok = N_gpu * price_per_gpu_hour / (tokens_per_s * 3600) * 1e6``; tokens per
dollar is its inverse; $ per user-hour divides the system's hourly price by the
measured concurrency (Little's law: throughput x mean latency).
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from infermeter.errors import ConfigError
from infermeter.results.accelerators import normalise, resolve_gpu

SECONDS_PER_HOUR = 3600.0
_OFFER_KEYS = ("gpu", "usd_per_gpu_hour", "provider", "price_type", "retrieved_at")


@dataclass(frozen=True, slots=True)
class Offer:
    """One price: a GPU at a provider, with where and when the price came from."""

    gpu: str
    usd_per_gpu_hour: float
    provider: str
    price_type: str
    retrieved_at: str
    region: str = ""
    source: str = ""


@dataclass(frozen=True)
class PriceTable:
    """Offers (first match wins) and currency rates (units per USD)."""

    offers: tuple[Offer, ...]
    currencies: dict[str, float] = field(default_factory=lambda: {"USD": 1.0})

    @property
    def gpus(self) -> list[str]:
        return sorted({o.gpu for o in self.offers})

    def offer(self, gpu: str, provider: str | None = None) -> Offer:
        slug = resolve_gpu(gpu, self.gpus)
        provider = provider.lower() if provider else None
        offers = [o for o in self.offers if o.gpu == slug]
        matches = [o for o in offers if provider in (None, o.provider.lower())]
        if not matches:
            known = ", ".join(o.provider for o in offers)
            raise ConfigError(
                f"No price for {slug!r} from provider {provider!r}. "
                f"Known providers for it: {known}."
            )
        return matches[0]

    def rate(self, currency: str) -> float:
        code = currency.upper()
        if code not in self.currencies:
            raise ConfigError(
                f"Unknown currency {currency!r}. Known: "
                f"{', '.join(sorted(self.currencies))} (add a rate per USD under "
                "[currencies] in your --prices file)."
            )
        return self.currencies[code]


def load_prices(user_file: str | Path | None = None) -> PriceTable:
    """The shipped example prices, overridden by ``user_file`` when given."""
    text = resources.files("infermeter.perfmodel").joinpath("data", "prices.toml")
    table = _parse(text.read_text(encoding="utf-8"), "built-in prices.toml")
    if user_file is None:
        return table
    path = Path(user_file)
    try:
        user = _parse(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise ConfigError(
            f"Cannot read price file {str(path)!r}: {exc.strerror}."
        ) from None
    return PriceTable(
        offers=user.offers + table.offers,
        currencies={**table.currencies, **user.currencies},
    )


def _parse(text: str, name: str) -> PriceTable:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Price file {name!r} is not valid TOML ({exc}).") from None
    raw_offers, raw_rates = data.get("offer", []), data.get("currencies", {})
    if not isinstance(raw_offers, list) or not all(
        isinstance(o, dict) for o in raw_offers
    ):
        raise ConfigError(
            f"Price file {name!r}: offers are [[offer]] tables (got offer = "
            f"{raw_offers!r})."
        )
    if not isinstance(raw_rates, dict):
        raise ConfigError(
            f"Price file {name!r}: [currencies] is a table such as EUR = 0.92 "
            f"(got {raw_rates!r})."
        )
    offers = tuple(_offer(o, name) for o in raw_offers)
    currencies = {
        str(k).upper(): _positive(v, f"currency {k}", name)
        for k, v in raw_rates.items()
    }
    return PriceTable(offers, currencies or {"USD": 1.0})


def _positive(value: object, what: str, name: str) -> float:
    """``value`` as a finite number > 0; else a one-line error naming the file."""
    number = (
        float(value)
        if isinstance(value, int | float) and not isinstance(value, bool)
        else math.nan
    )
    if not (math.isfinite(number) and number > 0):
        raise ConfigError(f"{what} must be a number > 0 in {name!r} (got {value!r}).")
    return number


def _offer(raw: dict[str, Any], name: str) -> Offer:
    missing = [k for k in _OFFER_KEYS if k not in raw]
    if missing:
        raise ConfigError(f"An [[offer]] in {name!r} lacks {', '.join(missing)}.")
    price = _positive(raw["usd_per_gpu_hour"], "usd_per_gpu_hour", name)
    return Offer(
        gpu=normalise(str(raw["gpu"])).slug,
        usd_per_gpu_hour=price,
        provider=str(raw["provider"]),
        price_type=str(raw["price_type"]),
        retrieved_at=str(raw["retrieved_at"]),
        region=str(raw.get("region", "")),
        source=str(raw.get("source", "")),
    )


@dataclass(frozen=True, slots=True)
class Cost:
    """Derived cost figures of one throughput at one price (in ``currency``)."""

    offer: Offer
    gpus: int
    currency: str
    per_gpu_hour: float
    system_per_hour: float
    per_million: float
    units_per_currency: float
    unit: str
    concurrency: float | None
    per_user_hour: float | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.offer.gpu,
            "gpus": self.gpus,
            "provider": self.offer.provider,
            "price_type": self.offer.price_type,
            "price_retrieved_at": self.offer.retrieved_at,
            "price_source": self.offer.source,
            "currency": self.currency,
            "per_gpu_hour": self.per_gpu_hour,
            "system_per_hour": self.system_per_hour,
            f"per_million_{self.unit}": self.per_million,
            f"{self.unit}_per_{self.currency.lower()}": self.units_per_currency,
            "concurrency": self.concurrency,
            "per_user_hour": self.per_user_hour,
            "derived": True,
        }


def compute_cost(
    table: PriceTable,
    *,
    gpu: str,
    gpus: int,
    throughput_per_s: float,
    unit: str = "tokens",
    concurrency: float | None = None,
    currency: str = "USD",
    provider: str | None = None,
) -> Cost:
    """Cost of ``throughput_per_s`` (output tokens or samples) on ``gpus`` x ``gpu``."""
    if gpus < 1:
        raise ConfigError(f"--gpus must be >= 1 (got {gpus}).")
    if throughput_per_s <= 0:
        raise ConfigError(
            f"Throughput must be > 0 to price it (got {throughput_per_s})."
        )
    rate = table.rate(currency)
    offer = table.offer(gpu, provider)
    per_gpu_hour = offer.usd_per_gpu_hour * rate
    system = per_gpu_hour * gpus
    per_hour_units = throughput_per_s * SECONDS_PER_HOUR
    per_user = system / concurrency if concurrency and concurrency > 0 else None
    return Cost(
        offer=offer,
        gpus=gpus,
        currency=currency.upper(),
        per_gpu_hour=per_gpu_hour,
        system_per_hour=system,
        per_million=system / per_hour_units * 1e6,
        units_per_currency=per_hour_units / system,
        unit=unit,
        concurrency=concurrency,
        per_user_hour=per_user,
    )


def measured_concurrency(metrics: dict[str, Any]) -> float | None:
    """Mean requests in flight by Little's law: samples/s x mean latency (s)."""
    rate = metrics.get("samples_per_second")
    latency = metrics.get("latency_ns") or {}
    mean = latency.get("mean") if isinstance(latency, dict) else None
    if not isinstance(rate, int | float) or not isinstance(mean, int | float):
        return None
    return float(rate) * float(mean) / 1e9
