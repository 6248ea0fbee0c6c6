"""A hub's configuration: every setting once, the file it is read from, and its checks.

settings.py     one dataclass a section of hub.conf, with the defaults (imports nothing
                of hedwig, so every layer can take its settings from here)
files.py        reading one hub.conf: each mistake is one line naming file, section, key
loading.py      load_config: the file over the defaults, then the cross-setting checks
tls.py          TLS files in, Twisted's and ssl's options out; tls_settings.py checks [tls]
zookeeper.py    the checks of [zookeeper]
installed.py    where the example configuration and the docs were installed
"""
