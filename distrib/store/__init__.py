"""Key-value stores used for rendezvous: TCPStore, FileStore, HashStore, PrefixStore."""

from .base import Store
from .file_store import FileStore
from .hash_store import HashStore
from .prefix_store import PrefixStore
from .tcp_store import TCPStore

__all__ = ["Store", "TCPStore", "FileStore", "HashStore", "PrefixStore"]
