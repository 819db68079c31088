# Kept so that `pip install -e .` works with older pip/setuptools; all metadata is in setup.cfg.
from setuptools import setup

setup()
