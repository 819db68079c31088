"""Pure helpers for the jobs. Nothing here imports mrjob, so each module is unit-tested alone."""
