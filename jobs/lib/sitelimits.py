"""Per-site page caps and request quotas, applied where a layer is chosen (MRGenerate).

A site file (jobs.lib.sites) may set, in ``[site]``:

    max_pages       pages of the site ever requested: new pages stop there, while the
                    ones already requested are still re-fetched when due
    quota_per_hour  requests to the site in any hour
    quota_per_day   requests to the site in any day

The fetch reducers cannot share counts, so the generator applies them: its mapper
counts, per limited site, the crawl database's pages that have been requested (a
``last_fetch``), and those requested in the last hour and day before the layer's
time; one reducer sees all of a site's candidates with those counts and keeps the
best ones the site still allows. The counts come from the crawl database, so they
carry across layers and cycles; a page re-fetched within the window counts once (the
database keeps its last fetch). A candidate a limit holds back stays ``unfetched`` in
the database and is counted by the limit's name; it comes back when the window moves
on, in a later layer or cycle. Secondary resources are outside the limits, as they
are outside the generator's other caps.

A limited site's reducer applies ``filter.max_urls_per_host`` to each of its hosts;
pages of one host that belong to two sites (``urls`` patterns) meet the cap once per
site. With ``generate.top_n`` the site's take counts against its limits before the
layer's top N is chosen, so a page the top N leaves out may have held another back.
"""
from datetime import datetime, timedelta, timezone

from jobs.lib import counters as C, records as R
from jobs.lib.sites import LIMIT_KEYS, SiteIndex

#: Shuffle-key prefix of a limited site's candidates (a space: never in a host name).
SITE_KEY = ' site '

#: The counter of each limit (group generate): candidates it held back.
HELD = {'max_pages': C.SITE_MAX_PAGES, 'quota_per_hour': C.SITE_QUOTA_HOUR,
        'quota_per_day': C.SITE_QUOTA_DAY}


def _keys(new):
    """The limits one more *new* page (else a due one) takes from."""
    return ('quota_per_hour', 'quota_per_day') + (('max_pages',) if new else ())


class Limits:
    """The configured sites that set a limit; falsy when none does."""

    def __init__(self, specs, now):
        limited = [s for s in specs or () if any(s.get(k) is not None for k in LIMIT_KEYS)]
        self.specs = {s['name']: s for s in limited}
        # Every site, not only the limited ones: a page belongs to the first site that
        # matches it, which may set no limit.
        self.index = SiteIndex(specs if limited else ())
        when = now.astimezone(timezone.utc)
        # Records' times are ISO-8601 UTC strings of one width: they compare as text.
        self.hour_since = _iso(when - timedelta(hours=1))
        self.day_since = _iso(when - timedelta(days=1))

    @classmethod
    def for_conf(cls, conf, now):
        return cls(conf.get('sites'), now)

    def __bool__(self):
        return bool(self.specs)

    def site(self, url):
        """The name of the limited site *url* belongs to, or None."""
        site = self.index.match(url)
        return site.name if site is not None and site.name in self.specs else None

    def usage(self, db):
        """What the crawl database record *db* adds to its site's counts:
        [requested, requested in the last hour, requested in the last day]. A URL
        counts when its last fetch made a request (not when robots.txt, a filter or a
        deferral kept it from the site)."""
        last = db.get('last_fetch')
        if not last or db['status'] not in R.DB_REQUESTED:
            return None
        return [1, int(last >= self.hour_since), int(last >= self.day_since)]


class Allowance:
    """What a site may still take in this layer, given its *used* counts (as
    :meth:`Limits.usage`, summed)."""

    def __init__(self, spec, used):
        pages, hour, day = used
        self.left = {}
        for key, have in (('max_pages', pages), ('quota_per_hour', hour),
                          ('quota_per_day', day)):
            if spec.get(key) is not None:
                self.left[key] = max(0, spec[key] - have)
        self.used = {'pages': pages, 'hour': hour, 'day': day}

    def exhausted(self, new):
        """The limit that leaves nothing for one more *new* (or due) page, or None."""
        return next((k for k in _keys(new) if k in self.left and self.left[k] <= 0), None)

    def take(self, new):
        """Take one request (a *new* page also takes one of max_pages): None when
        allowed, else the name of the limit that holds it back."""
        reason = self.exhausted(new)
        if reason:
            return reason
        for key in _keys(new):
            if key in self.left:
                self.left[key] -= 1
        self.used['hour'] += 1
        self.used['day'] += 1
        self.used['pages'] += int(new)
        return None


def static_bound(spec, new):
    """At most how many of a site's *new* (or due) candidates one layer can take,
    whatever the counts: (the number or None for no bound, the limit that sets it)."""
    bounds = [(spec[k], k) for k in _keys(new) if spec.get(k) is not None]
    return min(bounds) if bounds else (None, None)


def _iso(when):
    return when.strftime('%Y-%m-%dT%H:%M:%SZ')


def parse_time(text):
    """``2026-11-30T08:00:00Z`` -> aware datetime (UTC)."""
    return datetime.strptime(text, '%Y-%m-%dT%H:%M:%SZ').replace(tzinfo=timezone.utc)
