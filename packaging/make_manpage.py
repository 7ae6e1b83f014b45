#!/usr/bin/env python3
"""Writes rill(8) in roff from docs/operations.md (the "Command line" and "Signals" sections and
the start of "Reload"), so the man page says what the docs say. Standard library only.

    packaging/make_manpage.py docs/operations.md VERSION > rill.8
"""
import re
import sys


def section(md, title):
    m = re.search(r'^## %s\n(.*?)(?=^## )' % re.escape(title), md, re.S | re.M)
    return m.group(1).strip() if m else ''


def inline(text):
    text = text.replace('\\', '\\e')
    text = re.sub(r'`([^`]*)`', r'\\fB\1\\fR', text)
    text = re.sub(r'\*\*([^*]*)\*\*', r'\\fB\1\\fR', text)
    text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
    return text


def roff(md):
    out, in_code = [], False
    for line in md.splitlines():
        if line.startswith('```'):
            out.append('.EE' if in_code else '.EX')
            in_code = not in_code
            continue
        if in_code:
            out.append(line.replace('\\', '\\e').replace('.', '\\&.') if line.startswith('.') else line.replace('\\', '\\e'))
            continue
        if line.startswith('### '):
            out.append('.SS ' + inline(line[4:]))
        elif line.startswith('|'):
            cells = [c.strip() for c in line.strip('|').split('|')]
            if all(re.fullmatch(r':?-+:?', c) for c in cells if c):
                continue
            out.append('.TP\n' + inline(cells[0] or ' ') + '\n' + inline(' \u2014 '.join(c for c in cells[1:] if c)))
        elif not line.strip():
            out.append('.PP')
        else:
            text = inline(line)
            out.append(('\\&' + text) if text.startswith(('.', "'")) else text)
    return '\n'.join(out)


def main():
    md = open(sys.argv[1], encoding='utf-8').read()
    version = sys.argv[2] if len(sys.argv) > 2 else ''
    print('.TH RILL 8 "" "rill %s" "System Administration"' % version)
    print('.SH NAME\nrill \\- live streaming server (RTMP in; RTMP, HTTP-FLV and HLS out)')
    print('.SH SYNOPSIS\n.B rill\n[\\fB\\-c\\fR \\fIFILE\\fR] [\\fB\\-p\\fR \\fIPIDFILE\\fR] [\\fB\\-t\\fR] [\\fB\\-s\\fR \\fISIGNAL\\fR] [\\fB\\-v\\fR] [\\fB\\-h\\fR]')
    print('.SH DESCRIPTION\nRill runs as one master process and one worker process per CPU core. The configuration is\n'
          '.IR /etc/rill/rill.yaml ;\nthe full documentation is in\n.IR /usr/share/doc/rill .')
    for title, head in (('Command line', 'OPTIONS'), ('Signals', 'SIGNALS'), ('Reload', 'RELOAD')):
        print('.SH ' + head)
        print(roff(section(md, title)))
    print('.SH FILES\n.TP\n.I /etc/rill/rill.yaml\nconfiguration\n.TP\n.I /var/log/rill\nlog files (rotated by logrotate, reopened with \\fBrill \\-s reopen\\fR)')
    print('.SH SEE ALSO\n.BR systemctl (1),\n.BR journalctl (1)')


if __name__ == '__main__':
    main()
