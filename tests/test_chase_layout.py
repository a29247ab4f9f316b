"""The chase's layout (mb_chase_slot_at, kernels/families/chase_cycle.h):
each slot's pointer sits on a line hashed from the slot index, so that
every set of every cache level holds pointers (issue 30). Multichase's
mixer (the line from i mod 64) used 45 of the 64 L1 sets and, on
contiguous huge pages, a quarter of a 2 MiB 16-way L2's sets."""

import subprocess
from pathlib import Path

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "families.h"
#include "chase_cycle.h"

/* i mod 64, as multichase's mixer and membench before issue 30 */
static size_t mixer_at(size_t i, size_t slot)
{
    if (slot <= 64)
        return i * slot;
    unsigned long long z = (unsigned long long)((i & 63) + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ULL;
    z ^= z >> 29;
    return i * slot + (size_t)(z % (slot / 64)) * 64;
}

/* slots of `slot` bytes over `span` bytes: lines per set of a cache with
 * `sets` sets of 64-byte lines indexed by the (contiguous) address; prints
 * "sets_used min max" */
static void usage(int old, size_t slot, size_t span, size_t sets)
{
    unsigned *n = calloc(sets, sizeof *n);
    for (size_t i = 0; i < span / slot; i++) {
        size_t at = old ? mixer_at(i, slot) : mb_chase_slot_at(i, slot);
        if (at < i * slot || at >= (i + 1) * slot || at % 64) {
            printf("outside its slot\n");
            exit(1);
        }
        n[(at / 64) % sets]++;
    }
    size_t used = 0;
    unsigned lo = ~0u, hi = 0;
    for (size_t s = 0; s < sets; s++)
        used += n[s] > 0, lo = n[s] < lo ? n[s] : lo, hi = n[s] > hi ? n[s] : hi;
    printf("%zu %u %u\n", used, lo, hi);
    free(n);
}

int main(int argc, char **argv)
{
    usage(atoi(argv[1]), strtoull(argv[2], 0, 10), strtoull(argv[3], 0, 10), strtoull(argv[4], 0, 10));
    return 0;
}
"""


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    out = tmp_path_factory.mktemp("layout")
    (out / "d.c").write_text(DRIVER)
    cc = subprocess.run(["gcc", "-std=gnu11", "-O2", "-Wall", f"-I{KERNELS / 'families'}", str(out / "d.c"), "-o", str(out / "d")],
                        capture_output=True, text=True)  # fmt: skip
    assert cc.returncode == 0, cc.stderr

    def sets(old: bool, slot: int, span: int, nsets: int) -> tuple[int, int, int]:
        proc = subprocess.run([str(out / "d"), str(int(old)), str(slot), str(span), str(nsets)], capture_output=True, text=True, check=True)
        used, lo, hi = map(int, proc.stdout.split())
        return used, lo, hi

    return sets


KiB, MiB = 2**10, 2**20


@pytest.mark.parametrize("slot", [128, 256, 512, 1024, 2048, 4096])
def test_every_l1_set_holds_the_same_number_of_pointers(driver, slot):
    """A virtually indexed L1 (64 sets: the page offset): every block of
    slot/64 pages puts one pointer in every set, so 64 KiB of a 256-byte
    chase (256 lines) fills each of the 64 sets with exactly 4."""
    k = slot // 64
    for pages in (k, 4 * k, 16 * k):
        used, lo, hi = driver(False, slot, pages * 4096, 64)
        assert (used, lo, hi) == (64, 64 * pages // (64 * k) * 1, 64 * pages // (64 * k)), (slot, pages)


def test_multichase_mixer_left_l1_sets_empty(driver):
    used, lo, hi = driver(True, 256, 64 * KiB, 64)
    assert used == 45 and hi > 4  # the count: 45 of 64 sets
    assert driver(False, 256, 64 * KiB, 64) == (64, 4, 4)


@pytest.mark.parametrize("slot", [256, 1024])
def test_a_contiguous_huge_page_uses_every_l2_set(driver, slot):
    """A 16-way 2 MiB L2 (2048 sets, physically indexed; a 2 MiB THP page is
    physically contiguous): the page frame's bits pick the line through the
    hash, so the sets fill as by chance (4 lines a set on average here: a
    few percent stay empty at 1024 B), none far above its share; the mixer
    used a quarter of them at 256 B."""
    span = 8 * MiB
    lines = span // slot
    used, lo, hi = driver(False, slot, span, 2048)
    assert used >= 0.95 * 2048 and hi <= 3 * lines / 2048, (used, lo, hi)
    if slot == 256:
        assert driver(True, slot, span, 2048)[0] == 512
