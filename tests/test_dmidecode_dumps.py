"""The dmidecode parser on real dumps of many vendors and generations
(tests/fixtures/dmidecode/real: servers of Dell, HPE, Lenovo, Supermicro,
Huawei, Gigabyte, Intel and ASRock Rack, Arm servers, Intel and AMD
clients, KVM and Hyper-V guests), each against the channels and MT/s
written by hand from the dump: a layout it cannot read is "unknown", never
a wrong count."""

from pathlib import Path

import pytest
import yaml

from membench.probe import dmidecode

REAL = Path(__file__).parent / "fixtures" / "dmidecode" / "real"
EXPECTED = yaml.safe_load((REAL / "expected.yaml").read_text())


def test_the_collection_is_wide_enough():
    assert len(EXPECTED) >= 20 and sorted(p.stem for p in REAL.glob("*.txt")) == sorted(EXPECTED)
    vendors = {name.split("_")[0] for name in EXPECTED}
    assert len(vendors) >= 6, vendors


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_real_dump_gives_its_channels_or_unknown(name):
    expected = EXPECTED[name]
    found = dmidecode.peak_from_dmidecode((REAL / f"{name}.txt").read_text(), expected["packages"])
    if expected.get("expect") == "unknown":
        assert not found["known"] and found["reason"].startswith("dmidecode -t memory:"), found
        return
    assert found["known"], found
    assert (found["channels"], found["mts"]) == (expected["channels"], expected["mts"])
    assert found["total_gbps"] == pytest.approx(expected["channels"] * expected["mts"][0] * 8 / 1000)


def test_client_controllers_are_two_channels():
    """Issue 38: Controller0- and Controller1-ChannelA-DIMM1 are two channels:
    two DDR5-4800 DIMMs give 76.8 GB/s, not 38.4."""
    one = {"Bank Locator": "BANK 0", "Locator": "Controller0-ChannelA-DIMM1"}
    other = {"Bank Locator": "BANK 0", "Locator": "Controller1-ChannelA-DIMM1"}
    assert dmidecode.channel_of(one) != dmidecode.channel_of(other)
    assert dmidecode.channel_of(other) == (None, "1", "A")
