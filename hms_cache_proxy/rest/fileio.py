"""Where the REST catalog reads and writes table metadata: PyIceberg FileIOs chosen by scheme.

Local files (``file:`` and bare paths) go through ``ConfinedFS``: only inside the roots, never
through a symlink, never overwriting (docs/security.md). ``s3:``/``s3a:`` go through PyIceberg's
pyarrow FileIO with the static credentials of the settings. Anything else is refused (400).
"""

from __future__ import annotations

import io
from typing import Any

from pyiceberg.io import (
    S3_ACCESS_KEY_ID,
    S3_ENDPOINT,
    S3_REGION,
    S3_SECRET_ACCESS_KEY,
    FileIO,
    InputFile,
    InputStream,
    OutputFile,
    OutputStream,
)
from pyiceberg.io.pyarrow import PyArrowFileIO

from hms_cache_proxy.config import Settings
from hms_cache_proxy.confined_fs import ConfinedFS, OutsideRoots, local_path
from hms_cache_proxy.rest.errors import RestError, bad_request
from hms_cache_proxy.warehouse import split_uri

S3_SCHEMES = ("s3", "s3a")


class _ConfinedInput(InputFile):
    def __init__(self, fs: ConfinedFS, location: str, limit: int) -> None:
        super().__init__(location)
        self._fs, self._limit = fs, limit

    def __len__(self) -> int:
        return len(self._fs.read_bytes(self.location, self._limit))

    def exists(self) -> bool:
        return self._fs.exists(self.location)

    def open(self, seekable: bool = True) -> InputStream:
        return io.BytesIO(self._fs.read_bytes(self.location, self._limit))


class _Buffer(io.BytesIO):
    """Written whole to its (new) file when closed."""

    def __init__(self, fs: ConfinedFS, location: str) -> None:
        super().__init__()
        self._fs, self._location = fs, location

    def close(self) -> None:
        if not self.closed:
            self._fs.write_new(self._location, self.getvalue())
        super().close()


class _ConfinedOutput(OutputFile):
    def __init__(self, fs: ConfinedFS, location: str, limit: int) -> None:
        super().__init__(location)
        self._fs, self._limit = fs, limit

    def __len__(self) -> int:
        return len(self.to_input_file())

    def exists(self) -> bool:
        return self._fs.exists(self.location)

    def to_input_file(self) -> InputFile:
        return _ConfinedInput(self._fs, self.location, self._limit)

    def create(self, overwrite: bool = False) -> OutputStream:
        if self.exists():
            raise FileExistsError(f"{self.location} already exists")
        return _Buffer(self._fs, self.location)


class ConfinedFileIO(FileIO):
    """A FileIO for local locations inside the roots (reads bounded by ``limit`` bytes)."""

    def __init__(self, fs: ConfinedFS, limit: int) -> None:
        super().__init__({})
        self._fs, self._limit = fs, limit

    def new_input(self, location: str) -> InputFile:
        return _ConfinedInput(self._fs, location, self._limit)

    def new_output(self, location: str) -> OutputFile:
        return _ConfinedOutput(self._fs, location, self._limit)

    def delete(self, location: str | InputFile | OutputFile) -> None:
        path = location if isinstance(location, str) else location.location
        self._fs.delete(path)


class Storage:
    """The FileIO for a location, and whether a location may be touched at all."""

    def __init__(self, settings: Settings, fs: ConfinedFS) -> None:
        self._local = ConfinedFileIO(fs, settings.rest_max_metadata_bytes)
        self._fs = fs
        props: dict[str, Any] = {}
        if settings.s3_endpoint:
            props[S3_ENDPOINT] = settings.s3_endpoint
        if settings.s3_region:
            props[S3_REGION] = settings.s3_region
        if settings.s3_access_key_id:
            props[S3_ACCESS_KEY_ID] = settings.s3_access_key_id
        if settings.s3_secret_access_key is not None:
            props[S3_SECRET_ACCESS_KEY] = settings.s3_secret_access_key.get_secret_value()
        props["s3.force-virtual-addressing"] = str(not settings.s3_path_style_access).lower()
        self._s3 = PyArrowFileIO(props)

    def io_for(self, location: str) -> FileIO:
        """The FileIO serving ``location``; 400 for schemes this catalog does not reach and
        local locations outside the roots."""
        scheme = (split_uri(location)[0] or "file").lower()
        if scheme in S3_SCHEMES:
            return self._s3
        if scheme == "file":
            if local_path(location) is None or not self._fs.inside(location):
                raise bad_request(
                    f"{location} is outside the directories this catalog may write "
                    f"({self._fs.roots.describe()}); see filesystem_roots"
                )
            return self._local
        raise bad_request(f"{location}: only file: and s3: locations are served by this catalog")


def storage_error(location: str, exc: Exception) -> RestError:
    """A failed read of a metadata file, as a client can act on it."""
    if isinstance(exc, OutsideRoots):
        return bad_request(str(exc))
    if isinstance(exc, FileNotFoundError):
        return RestError(404, "NotFoundException", f"metadata file {location} does not exist")
    return RestError(500, "ServiceFailureException", f"cannot read {location}: {exc}")
