"""The read side of the Cloud Storage JSON API (v1) that the real gcloud's `gcloud storage cp
--recursive gs://BUCKET/PREFIX DIR` uses, served by fakecloud.py over the gcloud stand-in's
bucket folders (standin/storage.py: gs://BUCKET/NAME is the file gcs_root()/BUCKET/NAME, which
the workers' stand-in `gcloud storage cp` writes).  For tests/real-gcloud only: NOT Google's
API; nothing here is Cloud Storage.

What it answers, as https://cloud.google.com/storage/docs/json_api/v1 describes them:
  GET /storage/v1/b/BUCKET                          the bucket's metadata
  GET /storage/v1/b/BUCKET/o/NAME                   an object's metadata (404 for a "folder")
  GET /storage/v1/b/BUCKET/o?prefix=P[&delimiter=/] objects below P (and with a delimiter, the
                                                     "prefixes" one level down), in name order
  GET /[download/]storage/v1/b/BUCKET/o/NAME?alt=media   the object's bytes
Objects carry size, md5Hash and crc32c (base64 of the digest, big-endian for crc32c), so gcloud
validates every download as it would against Cloud Storage.  Every other method is a 405: the
workers upload with the stand-in, never through here.
"""

import base64
import hashlib
import json
import urllib.parse
from pathlib import Path

PREFIXES = ("/storage/v1/b/", "/download/storage/v1/b/")


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


CRC32C_TABLE = _crc32c_table()


def crc32c(data):
    """CRC-32C (Castagnoli), the checksum Cloud Storage keeps for every object."""
    c = 0xFFFFFFFF
    for byte in data:
        c = CRC32C_TABLE[(c ^ byte) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def handles(path):
    return path.startswith(PREFIXES)


class StorageError(Exception):
    def __init__(self, code, message):
        super().__init__(message)
        self.code, self.message = code, message


def _object_json(base, bucket, name, path):
    data = path.read_bytes()
    stamp = "2026-12-01T00:00:00.000Z"
    return {
        "kind": "storage#object", "id": "{}/{}/1".format(bucket, name), "name": name, "bucket": bucket,
        "generation": "1", "metageneration": "1", "contentType": "application/octet-stream",
        "storageClass": "STANDARD", "size": str(len(data)), "timeCreated": stamp, "updated": stamp,
        "md5Hash": base64.b64encode(hashlib.md5(data).digest()).decode(),
        "crc32c": base64.b64encode(crc32c(data).to_bytes(4, "big")).decode(),
        "etag": "CAE=",
        # Where gcloud downloads the bytes from: as Cloud Storage does, this server's own address.
        "mediaLink": "{}/download/storage/v1/b/{}/o/{}?generation=1&alt=media".format(
            base, bucket, urllib.parse.quote(name, safe="")),
    }


def _objects(base, root, bucket, prefix, delimiter):
    folder = root / bucket
    items, prefixes = [], set()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = path.relative_to(folder).as_posix()
        if not name.startswith(prefix):
            continue
        rest = name[len(prefix):]
        if delimiter and delimiter in rest:
            prefixes.add(prefix + rest.split(delimiter, 1)[0] + delimiter)
            continue
        items.append(_object_json(base, bucket, name, path))
    reply = {"kind": "storage#objects", "items": items}
    if prefixes:
        reply["prefixes"] = sorted(prefixes)
    return reply


def answer(base, root, method, raw_path, query):
    """(status, content type, body bytes) for one request to the server at `base`
    (http://HOST:PORT); raises StorageError."""
    if method != "GET":
        raise StorageError(405, "[loopback storage] read-only: {} {}".format(method, raw_path))
    path = raw_path[len("/download"):] if raw_path.startswith("/download/") else raw_path
    parts = path[len("/storage/v1/b/"):].split("/", 2)
    bucket = urllib.parse.unquote(parts[0])
    root = Path(root)
    if not bucket or "/" in bucket or bucket.startswith(".") or not (root / bucket).is_dir():
        raise StorageError(404, "The specified bucket does not exist.")
    if len(parts) == 1:
        return 200, "application/json", json.dumps({"kind": "storage#bucket", "id": bucket, "name": bucket,
                                                    "location": "US", "storageClass": "STANDARD"}).encode()
    if parts[1] != "o":
        raise StorageError(404, "[loopback storage] no such method: GET {}".format(raw_path))
    if len(parts) == 2 or parts[2] == "":
        body = _objects(base, root, bucket, query.get("prefix", ""), query.get("delimiter", ""))
        return 200, "application/json", json.dumps(body).encode()
    name = urllib.parse.unquote(parts[2])
    target = (root / bucket / name)
    if ".." in Path(name).parts or not target.is_file():
        raise StorageError(404, "No such object: {}/{}".format(bucket, name))
    if query.get("alt") == "media":
        return 200, "application/octet-stream", target.read_bytes()
    return 200, "application/json", json.dumps(_object_json(base, bucket, name, target)).encode()
