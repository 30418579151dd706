"""Cost per token: hand-computed cases, overrides and one-line errors."""

from __future__ import annotations

import pytest
from tests.one_line import one_line_error

from infermeter.errors import ConfigError
from infermeter.results.cost import compute_cost, load_prices


def test_8x_h100_at_2_99_and_24525_tok_s_is_0_271_per_million():
    cost = compute_cost(load_prices(), gpu="h100-sxm", gpus=8, throughput_per_s=24525)
    # 8 * 2.99 = 23.92 $/h; 24525 * 3600 = 88.29 Mtok/h; 23.92 / 88.29 = 0.27093
    assert cost.per_gpu_hour == 2.99
    assert cost.system_per_hour == pytest.approx(23.92)
    assert round(cost.per_million, 3) == 0.271
    assert cost.units_per_currency == pytest.approx(88_290_000 / 23.92)
    assert cost.offer.provider == "Lambda" and cost.offer.retrieved_at


def test_per_user_hour_divides_by_concurrency():
    cost = compute_cost(
        load_prices(), gpu="H100 SXM", gpus=8, throughput_per_s=1000, concurrency=100
    )
    assert cost.per_user_hour == pytest.approx(0.2392)
    assert cost.as_dict()["derived"] is True


def test_accepts_mlcommons_names_for_the_gpu():
    cost = compute_cost(
        load_prices(), gpu="NVIDIA H200-SXM-141GB", gpus=1, throughput_per_s=3600
    )
    assert cost.offer.gpu == "h200-sxm"
    assert cost.per_million == pytest.approx(3.59 / (3600 * 3600) * 1e6)


def test_user_file_overrides_and_adds_currency(tmp_path):
    path = tmp_path / "prices.toml"
    path.write_text(
        "[currencies]\nEUR = 0.5\n\n[[offer]]\ngpu = 'h100-sxm'\n"
        "usd_per_gpu_hour = 2.0\nprovider = 'Mine'\nprice_type = 'reserved-1y'\n"
        "retrieved_at = '2026-11-01'\n"
    )
    table = load_prices(path)
    cost = compute_cost(
        table, gpu="h100-sxm", gpus=2, throughput_per_s=100, currency="eur"
    )
    assert cost.offer.provider == "Mine" and cost.per_gpu_hour == 1.0
    assert cost.system_per_hour == 2.0 and cost.currency == "EUR"
    lambda_cost = compute_cost(
        table, gpu="h100-sxm", gpus=1, throughput_per_s=100, provider="lambda"
    )
    assert lambda_cost.per_gpu_hour == 2.99


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpu": "h300"}, "Unknown GPU 'h300'. Known: a100-sxm"),
        ({"currency": "XYZ"}, "Unknown currency 'XYZ'. Known: USD"),
        ({"provider": "nobody"}, "Known providers for it: Lambda, AWS"),
        ({"gpus": 0}, "--gpus must be >= 1"),
        ({"throughput_per_s": 0}, "Throughput must be > 0"),
    ],
)
def test_bad_input_is_one_line(kwargs, message):
    args = {"gpu": "h100-sxm", "gpus": 8, "throughput_per_s": 100.0, **kwargs}
    with pytest.raises(ConfigError, match=message) as info:
        compute_cost(load_prices(), **args)
    assert "\n" not in str(info.value)


def test_bad_price_files(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[[offer]\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_prices(bad)
    bad.write_text("[[offer]]\ngpu = 'x'\n")
    with pytest.raises(ConfigError, match="lacks usd_per_gpu_hour"):
        load_prices(bad)
    with pytest.raises(ConfigError, match="Cannot read price file"):
        load_prices(tmp_path / "missing.toml")


_OFFER = (
    "[[offer]]\ngpu = 'h100-sxm'\nprovider = 'p'\nprice_type = 'on-demand'\n"
    "retrieved_at = '2026-11-27'\n"
)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        # NaN and infinite prices were accepted; text rates, a scalar offer and
        # a scalar [currencies] were internal errors.
        (_OFFER + "usd_per_gpu_hour = nan\n", "usd_per_gpu_hour must be a number > 0"),
        (_OFFER + "usd_per_gpu_hour = inf\n", "usd_per_gpu_hour must be a number > 0"),
        (_OFFER + "usd_per_gpu_hour = true\n", "usd_per_gpu_hour must be a number > 0"),
        ("[currencies]\nEUR = 'x'\n", "currency EUR must be a number > 0"),
        ("[currencies]\nEUR = 0\n", "currency EUR must be a number > 0"),
        ("offer = 3\n", "offers are [[offer]] tables"),
        ("offer = ['x']\n", "offers are [[offer]] tables"),
        ("currencies = 3\n", "[currencies] is a table"),
    ],
)
def test_price_file_values_are_checked(tmp_path, text, says):
    message = one_line_error(load_prices, tmp_path / "prices.toml", text)
    assert says in message and "prices.toml" in message
