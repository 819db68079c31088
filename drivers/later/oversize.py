"""The size bar a later build's kept dataset must stay under to follow the change."""


def over_affected_max(c, path, name):
    """Why a later build is made in full rather than from the last one: the kept
    dataset at *path* (shown as NAME/) is over merge.affected_max_bytes, which bounds
    what the driver reads of it; None when it is not."""
    size, most = c.fs.size(path), c.conf['merge']['affected_max_bytes']
    if size > most:
        return '%s/ holds %d bytes, over merge.affected_max_bytes (%d)' % (name, size, most)
    return None
