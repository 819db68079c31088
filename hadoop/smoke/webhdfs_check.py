"""WebHDFS check with the `hdfs` PyPI package against the single-node Hadoop.

    .venv/bin/python hadoop/smoke/webhdfs_check.py

Exercises status, list, write (CREATE: NameNode 307 -> DataNode), read (OPEN: 307 ->
DataNode), append, rename, delete, and checks that every redirect stays on loopback.
"""
import sys
import time

import requests
from hdfs import InsecureClient
from hdfs.util import HdfsError

NN = "http://127.0.0.1:9870"
BASE = "/tmp/mrcrawl-webhdfs-check"


def main():
    t0 = time.time()
    client = InsecureClient(NN, user="root")

    # The redirect target of CREATE/OPEN must be the DataNode on loopback.
    r = requests.put(NN + "/webhdfs/v1%s/probe?op=CREATE&user.name=root&overwrite=true" % BASE,
                     allow_redirects=False, timeout=10)
    loc = r.headers.get("Location", "")
    print("CREATE redirect:", r.status_code, loc.split("?")[0])
    assert r.status_code == 307 and loc.startswith("http://127.0.0.1:9864/"), loc

    client.delete(BASE, recursive=True)
    client.makedirs(BASE + "/d")
    data = "".join("line %d ünïcode\n" % i for i in range(1000)).encode("utf-8")
    client.write(BASE + "/d/a.txt", data=data, overwrite=True)
    with client.read(BASE + "/d/a.txt") as f:
        got = f.read()
    assert got == data, "read back mismatch"
    print("write+read ok: %d bytes" % len(got))

    st = client.status(BASE + "/d/a.txt")
    assert st["type"] == "FILE" and st["length"] == len(data), st
    print("status ok:", {k: st[k] for k in ("type", "length", "replication")})

    client.write(BASE + "/d/a.txt", data=b"tail\n", append=True)
    assert client.status(BASE + "/d/a.txt")["length"] == len(data) + 5
    print("append ok")

    with client.read(BASE + "/d/a.txt", offset=5, length=5) as f:
        assert f.read() == data[5:10]
    print("ranged read ok")

    assert client.list(BASE + "/d") == ["a.txt"], client.list(BASE + "/d")
    client.rename(BASE + "/d/a.txt", BASE + "/d/b.txt")
    assert client.list(BASE + "/d") == ["b.txt"]
    print("list+rename ok:", client.list(BASE + "/d"))

    assert client.status(BASE + "/nope", strict=False) is None
    try:
        client.status(BASE + "/nope")
        raise AssertionError("expected HdfsError")
    except HdfsError as e:
        print("missing path -> HdfsError:", str(e).splitlines()[0][:80])

    client.delete(BASE + "/d/b.txt")
    assert client.list(BASE + "/d") == []
    assert client.delete(BASE, recursive=True)
    assert client.status(BASE, strict=False) is None
    print("delete ok")
    print("WEBHDFS OK in %.2fs" % (time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
