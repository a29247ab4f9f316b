"""The AWS paper's EC2 latency table (8-23 ns) is lmbench's lat_mem_rd with a
64 B stride, which the prefetchers serve: it maps to the chase's `stride`
op, never to the random chase's DRAM latency (issue 38)."""

from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def test_the_lmbench_table_maps_to_the_stride_op():
    paper = yaml.safe_load((REPO / "references" / "papers" / "aws.yaml").read_text())
    ec2 = [n for n in paper["numbers"] if n["kernel"] == "chase" and n["system"] != "xeon_server"]
    assert len(ec2) == 14 and all(n["op"] == "stride" for n in ec2)
    assert max(n["value"] for n in ec2) <= 23  # no DRAM latency is this short: prefetched
    assert all(n.get("op") != "stride" for n in paper["numbers"] if n["system"] == "xeon_server")
    chase = yaml.safe_load((REPO / "kernels" / "families" / "variants.yaml").read_text())["families"]["chase"]
    assert "stride" in chase["ops"]
