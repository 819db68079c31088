"""Word count smoke job for mrcrawl's single-node Hadoop (see hadoop/NOTES.md).

Each input line is a small HTML snippet. The mapper strips tags with selectolax,
counts words with the ``wc_helper`` package (shipped with --py-files) and counts
link hosts with ada_url. selectolax and ada_url are NOT installed for the task
Python; they arrive in a --archives tarball put on PYTHONPATH by a --setup command.
It also reports, per task, where each module was imported from, so the driver
can prove that the imports came from the shipped archive.
"""
import json
import os
import sys

from mrjob.job import MRJob
from mrjob.step import MRStep


def _origin(modname):
    try:
        mod = __import__(modname)
    except ImportError:
        return None
    return os.path.abspath(getattr(mod, "__file__", "") or "")


class MRWordCount(MRJob):
    def steps(self):
        return [MRStep(mapper_init=self.mapper_init, mapper=self.mapper,
                       mapper_final=self.mapper_final,
                       combiner=self.combiner, reducer=self.reducer)]

    def mapper_init(self):
        self.origins = {
            "wc_helper": _origin("wc_helper"),
            "ada_url": _origin("ada_url"),
            "selectolax": _origin("selectolax"),
            "mrjob": _origin("mrjob"),
            "python": sys.executable,
            "cwd": os.getcwd(),
            "uid": os.getuid(),
        }
        for mod in ("wc_helper", "ada_url", "selectolax"):
            path = self.origins[mod]
            if path is None:
                self.increment_counter("smoke", mod + "_missing")
            elif (os.sep + "deps" + os.sep) in path:
                self.increment_counter("smoke", mod + "_from_archive")
            elif path.startswith(os.getcwd()):
                self.increment_counter("smoke", mod + "_from_task_dir")
            else:
                self.increment_counter("smoke", mod + "_from_elsewhere")

    def mapper(self, _, line):
        import wc_helper

        self.increment_counter("smoke", "lines")
        text = line
        if self.origins["selectolax"]:
            from selectolax.lexbor import LexborHTMLParser

            tree = LexborHTMLParser(line)
            text = tree.text(separator=" ")
            if self.origins["ada_url"]:
                for a in tree.css("a[href]"):
                    host = wc_helper.url_host(a.attributes["href"])
                    self.increment_counter("smoke", "links")
                    yield "host:" + host, 1
        for w in wc_helper.words(text):
            self.increment_counter("smoke", "words")
            yield w, 1

    def mapper_final(self):
        yield "__origin__", json.dumps(self.origins, sort_keys=True)

    def combiner(self, key, values):
        if key == "__origin__":
            for v in set(values):
                yield key, v
        else:
            yield key, sum(values)

    def reducer(self, key, values):
        if key == "__origin__":
            yield key, sorted(set(values))
        else:
            yield key, sum(values)


if __name__ == "__main__":
    MRWordCount.run()
