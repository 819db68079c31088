"""Politeness gaps as the wire saw them: a tcpdump capture of a wide-web crawl, judged
without the server's clock.

The wide bench judges politeness from its server's access log (bench/wide.py), which
stamps a response's end just after its one event loop writes it. On a loaded machine
(a YARN crawl's JVMs on the same two cores) the loop can be descheduled between the
write and the stamp, so the end is logged late and the next request looks early. The
kernel's packet times have no such lag. Capture while a crawl runs, then judge:

    tcpdump -i lo -n -s 96 -w /tmp/crawl.pcap 'tcp port 18647' &   # before the crawl
    python3 bench/wire_gaps.py /tmp/crawl.pcap [--port 18647] [--delay 1.0]

Per server address (a host of the web): the gap from the last packet of a response
that carried data to the first data packet of the next request, and how many gaps are
shorter than the delay less 10 ms (the judge's tolerance). Reads the classic pcap
format (Ethernet or Linux cooked capture, IPv4, TCP); standard library only.
"""
import argparse
import collections
import struct

TOLERANCE = 0.01


def packets(path):
    """(time, src ip, src port, dst ip, dst port, payload bytes) of each TCP packet."""
    with open(path, 'rb') as f:
        head = f.read(24)
        magic = struct.unpack('<I', head[:4])[0]
        endian = '<' if magic in (0xa1b2c3d4, 0xa1b23c4d) else '>'
        nano = magic in (0xa1b23c4d, 0x4d3cb2a1)
        link = struct.unpack(endian + 'I', head[20:24])[0]
        skip = {1: 14, 113: 16}[link]        # Ethernet, Linux cooked (SLL)
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, caplen, _ = struct.unpack(endian + 'IIII', rec)
            data = f.read(caplen)
            ip = data[skip:]
            if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
                continue
            ihl, total = (ip[0] & 15) * 4, struct.unpack('>H', ip[2:4])[0]
            tcp = ip[ihl:]
            if len(tcp) < 13:
                continue
            sport, dport = struct.unpack('>HH', tcp[:4])
            payload = total - ihl - (tcp[12] >> 4) * 4
            yield (sec + frac / (1e9 if nano else 1e6), '.'.join(map(str, ip[12:16])), sport,
                   '.'.join(map(str, ip[16:20])), dport, payload)


def gaps(path, port):
    """{server address: [gap seconds, ...]}: response data to the next request's data."""
    events = collections.defaultdict(list)
    for t, src, sport, dst, dport, payload in packets(path):
        if payload <= 0:
            continue
        if dport == port:
            events[dst].append((t, 'request'))
        elif sport == port:
            events[src].append((t, 'response'))
    out = {}
    for addr, evs in events.items():
        evs.sort()
        found, last_response, previous = [], None, None
        for t, kind in evs:
            if kind == 'response':
                last_response = t
            elif previous == 'response':
                found.append(t - last_response)
            previous = kind
        out[addr] = found
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('pcap')
    ap.add_argument('--port', type=int, default=18647)
    ap.add_argument('--delay', type=float, default=1.0)
    a = ap.parse_args(argv)
    by_addr = gaps(a.pcap, a.port)
    every = [g for found in by_addr.values() for g in found]
    short = sorted((g, addr) for addr, found in by_addr.items() for g in found
                   if g < a.delay - TOLERANCE)
    print('hosts %d, gaps %d, smallest %s, shorter than %.2f s: %d on %d hosts' % (
        len(by_addr), len(every), '%.4f s' % min(every) if every else None,
        a.delay - TOLERANCE, len(short), len({addr for _, addr in short})))
    for g, addr in short[:20]:
        print('  %s %.4f s' % (addr, g))


if __name__ == '__main__':
    main()
