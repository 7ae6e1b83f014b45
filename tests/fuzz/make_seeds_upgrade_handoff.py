#!/usr/bin/env python3
"""Writes the seed corpus for upgrade_handoff_fuzz (the outputs are committed). Deterministic:
the same named files every run.

  tests/fuzz/corpus/upgrade_handoff/  values of RILL_UPGRADE (process/upgrade_handoff.h)
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, 'corpus', 'upgrade_handoff')

BASE = 'link=1;version=0.1.0;master=4100;generation=2;force=0;shm=5,6,7,8'
SEEDS = {
    'minimal': 'link=1;master=1;shm=3,4,5,6',
    'two_workers': BASE + ';listen=rtmp,127.0.0.1:1935,9,10;listen=http,127.0.0.1:8080,11,12'
                          ';listen=api,127.0.0.1:8081,13,14',
    'tls_v6': BASE.replace('force=0', 'force=1') + ';listen=rtmp.tls,[::]:1936,9;listen=http.tls,[::1]:8443,10',
    'no_listener': BASE,
    'bad_field': BASE + ';what=1',
    'bad_fd': BASE + ';listen=rtmp,127.0.0.1:1935,x',
    'short_shm': 'link=1;master=1;shm=3,4,5',
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, text in SEEDS.items():
        with open(os.path.join(OUT, name), 'w') as f:
            f.write(text)


if __name__ == '__main__':
    main()
