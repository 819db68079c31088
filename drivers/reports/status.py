"""OUT/status.json: where a run of the crawl is, for a program to read while it runs.

Rewritten whole (drivers/runtime/fs.py's atomic write_text) when the run starts, as
each step starts and each layer ends, and when the run ends::

    {"state": "running" | "finished" | "stopped" | "failed" | "interrupted",
     "error": str (failed, interrupted), "host", "pid", "started", "updated",
     "ended" (once it ended), "cycle", "depth", "first_layer",
     "layer" (the layer under way), "step" (the step under way, as steps/ names it),
     "step_started", "fetch": the layer's fetch while it runs, read from its job's
     counters every progress.seconds (null otherwise): {"layer", "urls", "done",
     "fetched", "errors", "keys_in_flight", "pages_per_second_now",
     "pages_per_second", "eta_seconds"} (drivers/reports/progress.py), "layers": [{"layer", "urls_in", "fetched", "errors", "seconds"}]
     (this run's layers so far), "urls_in", "fetched", "errors" (their sums),
     "pages_per_second" (fetched over the layers' seconds),
     "eta_seconds" (the layers' mean seconds times the layers left to the depth, the
     final outputs not counted; null before a layer ended or once none is left)}

Times are UTC ISO-8601. ``errors``: a layer's http_error and network_error URLs.
"""
import json
import logging
import os
import socket
import threading

from drivers.folder import layout
from jobs.lib.records import now_iso

log = logging.getLogger(__name__)


class Status:
    def __init__(self, fs, out):
        self.fs, self.path = fs, fs.join(out, layout.STATUS)
        self.doc = {}
        self.lock = threading.Lock()

    def start(self, cycle, depth, first_layer):
        self.doc = {'state': 'running', 'host': socket.gethostname(), 'pid': os.getpid(),
                    'started': now_iso(), 'cycle': cycle, 'depth': depth,
                    'first_layer': first_layer, 'layer': None, 'step': None,
                    'step_started': None, 'fetch': None, 'layers': [], 'urls_in': 0, 'fetched': 0,
                    'errors': 0, 'pages_per_second': None, 'eta_seconds': None}
        self._write()

    def layer(self, layer):
        """Layer *layer* starts."""
        self.doc['layer'] = layer
        self._write()

    def step(self, name):
        """Step *name* starts."""
        self.doc.update(step=name, step_started=now_iso())
        self._write()

    def fetch(self, figures):
        """The fetch under way has reached *figures* (drivers/reports/progress.py's
        FetchProgress.figures; None once it ended)."""
        self.doc['fetch'] = figures
        self._write()

    def layer_done(self, row):
        """A layer ended with summary row *row* (drivers/reports/summary.py layer_row)."""
        done = {'layer': row['layer'], 'urls_in': row['urls_in'], 'fetched': row['fetched'],
                'errors': row['http_error'] + row['network_error'],
                'seconds': row['seconds']}
        layers = self.doc['layers'] = [r for r in self.doc.get('layers', ())
                                       if r['layer'] != row['layer']] + [done]
        for key in ('urls_in', 'fetched', 'errors'):
            self.doc[key] = sum(r[key] for r in layers)
        seconds = sum(r['seconds'] for r in layers)
        self.doc['pages_per_second'] = round(self.doc['fetched'] / seconds, 2) \
            if seconds else None
        left = (self.doc.get('first_layer') or 0) + (self.doc.get('depth') or 0) - \
            row['layer']
        self.doc['eta_seconds'] = round(left * seconds / len(layers), 1) if left > 0 else None
        self._write()

    def end(self, state, error=None):
        """The run ended: *state* finished, stopped, failed or interrupted."""
        self.doc.update(state=state, ended=now_iso(), step=None, eta_seconds=None)
        if error is not None:
            self.doc['error'] = error
        self._write()

    def _write(self):
        with self.lock:      # a fetch's progress thread writes too
            self._write_now()

    def _write_now(self):
        self.doc['updated'] = now_iso()
        try:
            self.fs.write_text(self.path, json.dumps(self.doc, indent=1, sort_keys=True))
        except OSError as e:
            # Nor stop the crawl, nor come before its own error (a full disk is the
            # step's failure to report): its "updated" time tells a reader it is stale.
            log.debug('%s not written: %s', self.path, e)
