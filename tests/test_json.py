"""Unit test of the harness's hand-written JSON writer (kernels/harness/json.c):
string escaping (control characters, quotes, UTF-8 kept, invalid bytes
replaced) and number formatting (17 significant digits, floats stay
floats, non-finite values null), checked on the exact text it writes and
on what a JSON parser reads back."""

import json
import math
import subprocess
from pathlib import Path

import pytest

from helpers_run import compiled

KERNELS = Path(__file__).resolve().parent.parent / "kernels"

DRIVER = r"""
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "json.h"

/* one JSON value per line: the writer's text, nothing else */
static void line(jbuf_t *b) { jb_raw(b, "\n"); fputs(b->s, stdout); free(b->s); *b = (jbuf_t){0}; }

int main(void)
{
    jbuf_t b = {0};
    jb_string(&b, "plain"); line(&b);
    jb_string(&b, "q\"b\\n\nr\rt\t"); line(&b);
    jb_string(&b, "\x01\x1f\x7f"); line(&b);
    jb_string(&b, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"); line(&b);
    jb_string(&b, "a\xff" "b\xc0\x80" "c\xed\xa0\x80" "d\xe2\x82"); line(&b);
    jb_string(&b, NULL); line(&b);
    double xs[] = {1.0, -0.0, 2.5, 0.1, 1e22, 1e300, 5e-324, 123456789012345678.0, -3.0};
    for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
        jb_double(&b, xs[i]);
        line(&b);
    }
    jb_double(&b, NAN); line(&b);
    jb_double(&b, INFINITY); line(&b);
    jb_double(&b, -INFINITY); line(&b);
    /* an object: commas between keys, every kv_ writer */
    int ints[] = {3, -1};
    double dbls[] = {0.5, NAN, 4.0};
    jb_raw(&b, "{");
    kv_str(&b, "s", "x");
    kv_int(&b, "min", LLONG_MIN);
    kv_int(&b, "max", LLONG_MAX);
    kv_null(&b, "n");
    kv_bool(&b, "t", 1);
    kv_bool(&b, "f", 0);
    kv_double(&b, "d", 7.0);
    kv_ints(&b, "ints", ints, 2);
    kv_ints(&b, "no_ints", NULL, 0);
    kv_doubles(&b, "dbls", dbls, 3);
    kv_str(&b, "k\"ey", NULL);
    jb_raw(&b, "}");
    line(&b);
    /* growth: a string far longer than any first buffer */
    char *big = malloc(100001);
    memset(big, 'z', 100000);
    big[100000] = '\0';
    big[500] = '"';
    jb_string(&b, big);
    line(&b);
    free(big);
    return 0;
}
"""


@pytest.fixture(scope="module")
def lines(tmp_path_factory):
    exe = compiled(tmp_path_factory.mktemp("json"), DRIVER, KERNELS / "harness", KERNELS / "harness" / "json.c")
    out = subprocess.run([str(exe)], capture_output=True, check=True, timeout=30).stdout
    return out.decode("utf-8").split("\n")[:-1]


def test_strings_are_escaped(lines):
    assert lines[0] == '"plain"'
    assert lines[1] == r'"q\"b\\n\nr\rt\t"'
    assert lines[2] == r'"\u0001\u001f\u007f"'
    assert json.loads(lines[1]) == 'q"b\\n\nr\rt\t'
    assert json.loads(lines[2]) == "\x01\x1f\x7f"


def test_utf8_is_kept_and_invalid_bytes_are_replaced(lines):
    assert lines[3] == '"café € 😀"'
    # a stray byte, an overlong NUL, a surrogate, a cut-off sequence: each
    # invalid byte becomes one U+FFFD, the valid text around it stays
    assert lines[4] == r'"a\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffd"'
    assert json.loads(lines[4]) == "a\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffd"
    assert lines[5] == "null"


def test_numbers_keep_every_digit_and_stay_floats(lines):
    expected = ["1.0", "-0.0", "2.5", "0.10000000000000001", "1e+22",
                "1.0000000000000001e+300", "4.9406564584124654e-324",
                "1.2345678901234568e+17", "-3.0"]
    values = [1.0, -0.0, 2.5, 0.1, 1e22, 1e300, 5e-324, 123456789012345678.0, -3.0]
    assert lines[6:15] == expected
    for text, value in zip(lines[6:15], values):
        parsed = json.loads(text)
        assert isinstance(parsed, float) and parsed == value
        assert math.copysign(1, parsed) == math.copysign(1, value)


def test_non_finite_numbers_are_null(lines):
    assert lines[15:18] == ["null", "null", "null"]


def test_objects_join_keys_with_commas(lines):
    assert lines[18] == ('{"s":"x","min":-9223372036854775808,"max":9223372036854775807,'
                         '"n":null,"t":true,"f":false,"d":7.0,"ints":[3,-1],"no_ints":[],'
                         '"dbls":[0.5,null,4.0],"k\\"ey":null}')
    record = json.loads(lines[18])
    assert record["min"] == -(2**63) and record["dbls"] == [0.5, None, 4.0]


def test_buffer_grows_for_long_strings(lines):
    big = json.loads(lines[19])
    assert len(big) == 100000 and big[500] == '"' and big.count("z") == 99999
