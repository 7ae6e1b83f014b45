#!/usr/bin/env python3
"""Writes the seed corpus for access_line_fuzz (the outputs are committed). Deterministic: the same
named files every run; inputs a fuzzing round added (named by their SHA-1) are kept.

  tests/fuzz/corpus/access_line/  a query string, also used as every client-given field
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'corpus', 'access_line')

SEEDS = {
    'token': b'expires=1796438609&sign=9b1c2d3e4f',
    'encoded_names': b'%73ign=ab&sig%6E=cd&TOKEN=x&%s=1&+sign=2',
    'no_value': b'sign&token=&a=1&&=',
    'quotes_and_controls': b'a="b"\\c\r\n\x01\x7f\xc3\xa9&sign="x"',
    'peer_v6': b'[::1]:1935',
    'empty': b'',
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()
