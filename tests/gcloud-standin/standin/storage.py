"""`gcloud storage cp|rsync`: a local folder stands in for Cloud Storage.

gs://BUCKET/NAME is the file $GCLOUD_STANDIN_GCS/BUCKET/NAME (default
$GCLOUD_STANDIN_STATE/gcs); a bucket exists when its folder does. Objects are
the regular files under it, named by their path with '/'; a "prefix" (gcloud's
PrefixResource, what the console calls a folder) exists while an object is
under it. The naming rules (§8) follow gcloud 578's copy_task_iterator.py
(_get_copy_destination, _complete_destination,
_get_destination_suffix_for_recursion) and name_expansion.py."""

import os
import re
import shutil
from pathlib import Path

from .console import Exit, STANDIN_TAG, fail, not_emulated, status
from .grammar import SPECS, STORAGE, reject_not_emulated
from .state import check_credentials, state_dir


_WILDCARD = re.compile(r"[*?\[\]]")
_GENERATION = re.compile(r"#\d+$")


def gcs_root():
    raw = os.environ.get("GCLOUD_STANDIN_GCS", "")
    return Path(raw).resolve() if raw else state_dir() / "gcs"


class SUrl:
    """A storage URL as gcloud's storage_url: `gs://BUCKET/NAME` or a local file path
    (`file://PATH` or a plain path). `text` is the versionless URL string gcloud
    compares and splits: file URLs are written `file://PATH`."""

    def __init__(self, prog, raw):
        self.raw = raw
        if raw.startswith("gs://"):
            self.cloud = True
            rest = raw[len("gs://"):]
            self.bucket, _, self.name = rest.partition("/")
            if _GENERATION.search(raw):
                not_emulated(prog, "a version-specific URL ({})".format(raw))
            self.text = raw
        elif re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", raw) and not raw.startswith("file://"):
            not_emulated(prog, "the URL scheme of {!r} (only gs:// and local paths are)".format(raw))
        else:
            self.cloud = False
            path = raw[len("file://"):] if raw.startswith("file://") else raw
            if path == "-":
                not_emulated(prog, "streaming to or from stdin/stdout ('-')")
            self.path = os.path.expanduser(path)
            self.text = "file://" + self.path

    @property
    def delimiter(self):
        return "/" if self.cloud else os.sep

    def is_bucket(self):
        return self.cloud and self.name == ""

    def join(self, suffix):
        """storage_url.join: this URL (without a final delimiter) plus suffix."""
        base = self.text.rstrip(self.delimiter) if not self.is_bucket() else self.text.rstrip("/")
        return base + self.delimiter + suffix.lstrip(self.delimiter)


class SRes:
    """A resource: an object or file (container=False), or a prefix, bucket or
    directory (container=True). `text` is its URL string, `path` the file that holds it."""

    def __init__(self, text, container, path, exists=True):
        self.text, self.container, self.path, self.exists = text, container, path, exists


def bucket_folder(prog, url):
    folder = gcs_root() / url.bucket
    if not url.bucket or "/" in url.bucket or url.bucket in (".", "..") or not folder.is_dir():
        fail(prog, "HTTPError 404: The specified bucket does not exist.")
    return folder


def cloud_objects(folder):
    """Every object name in a bucket folder, sorted as the listing API returns them."""
    names = []
    for root, _, files in os.walk(str(folder)):
        for f in files:
            names.append(os.path.relpath(os.path.join(root, f), str(folder)).replace(os.sep, "/"))
    return sorted(names)


def _wildcard_regex(pattern):
    """gcloud's wildcards: `*` within one level, `**` across levels, `?`, `[...]`."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1:end]
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


def top_level(prog, url):
    """The resources a URL names before recursion (wildcard_iterator): for a cloud URL
    the object, else the prefix (`gs://b/p/`), else nothing; with wildcards, every
    object and prefix that matches. For a local path, the file or directory; with
    wildcards, what glob finds."""
    if url.cloud:
        folder = bucket_folder(prog, url)
        if url.is_bucket():
            return [SRes("gs://{}/".format(url.bucket), True, folder)]
        names = cloud_objects(folder)
        if not _WILDCARD.search(url.name):
            name = url.name.rstrip("/")
            found = []
            if not url.name.endswith("/") and name in names:
                found.append(SRes("gs://{}/{}".format(url.bucket, name), False, folder / name))
            elif any(n.startswith(name + "/") for n in names):
                found.append(SRes("gs://{}/{}/".format(url.bucket, name), True, folder / name))
            return found
        regex = _wildcard_regex(url.name.rstrip("/"))
        objects, prefixes = [], []
        for n in names:
            if regex.match(n):
                objects.append(n)
            parts = n.split("/")
            for k in range(1, len(parts)):
                p = "/".join(parts[:k])
                if regex.match(p) and p not in prefixes:
                    prefixes.append(p)
        found = [SRes("gs://{}/{}".format(url.bucket, n), False, folder / n) for n in objects]
        found += [SRes("gs://{}/{}/".format(url.bucket, p), True, folder / p) for p in sorted(prefixes)]
        return sorted(found, key=lambda r: r.text)
    import glob
    paths = sorted(glob.glob(url.path, recursive=True)) if _WILDCARD.search(url.path) else (
        [url.path] if os.path.lexists(url.path) else [])
    return [SRes("file://" + p, os.path.isdir(p), Path(p)) for p in paths]


def nested(resource):
    """Every object or file under a container (recursion: `container/**`)."""
    if resource.text.startswith("gs://"):
        base = resource.text.rstrip("/")
        folder = resource.path
        return [SRes(base + "/" + n, False, folder / n) for n in cloud_objects(folder)]
    found = []
    for root, dirs, files in os.walk(str(resource.path)):
        dirs.sort()
        for f in sorted(files):
            p = os.path.join(root, f)
            found.append(SRes("file://" + p, False, Path(p)))
    return found


class Expanded:
    """name_expansion.NameExpansionResult: a resource and the URL it was expanded from."""

    def __init__(self, resource, expanded_url):
        self.resource, self.expanded_url = resource, expanded_url


def expand_sources(prog, urls, recursive):
    """NameExpansionIterator: (results, has_multiple_top_level_sources); prints gcloud's
    warning for containers without recursion and fails, after copying nothing, when a
    URL matched nothing (the error gcloud raises once its iteration is over)."""
    results, unmatched, top_count = [], [], 0
    for url in urls:
        matched = False
        for top in top_level(prog, url):
            top_count += 1
            if not top.container:
                results.append(Expanded(top, top.text))
                matched = True
            elif recursive:
                for child in nested(top):
                    results.append(Expanded(child, top.text))
                    matched = True
            else:
                status("WARNING: Omitting {} because it is a container, and recursion is not "
                       "enabled.".format(top.text))
        if not matched:
            unmatched.append(url.raw)
    return results, len(urls) > 1 or top_count > 1, unmatched


def raw_destination(prog, url):
    """_get_raw_destination: the destination resource, or one that does not exist."""
    if url.cloud:
        if not url.bucket:
            fail(prog, "The cp command does not support provider-only destination URLs.")
        if _WILDCARD.search(url.name):
            matches = top_level(prog, url)
            if len(matches) != 1:
                fail(prog, "Destination ({}) {}.".format(
                    url.raw, "must match exactly one URL" if matches else "contains an unexpected wildcard"))
            return matches[0]
        bucket_folder(prog, url)
        found = top_level(prog, url)
        if found:
            return found[0]
        return SRes(url.text, False, None, exists=False)
    if _WILDCARD.search(url.path):
        matches = top_level(prog, url)
        if len(matches) != 1:
            fail(prog, "Destination ({}) {}.".format(
                url.raw, "must match exactly one URL" if matches else "contains an unexpected wildcard"))
        return matches[0]
    if os.path.lexists(url.path):
        return SRes(url.text, os.path.isdir(url.path), Path(url.path))
    return SRes(url.text, False, None, exists=False)


def destination_is_container(dest, url):
    """_destination_is_container."""
    if dest.exists and dest.container:
        return True
    if not url.cloud:
        return os.path.isdir(url.path)
    return url.text.endswith("/") or url.is_bucket()


def _strip_scheme(text):
    return text.split("://", 1)[1] if "://" in text else text


def complete_destination(dest, dest_url, source, multiple_top_level):
    """_complete_destination and _get_destination_suffix_for_recursion: the URL string a
    source lands at inside the destination container."""
    src = source.resource.text
    delim = "/" if src.startswith("gs://") else os.sep
    if src != source.expanded_url:
        # Recursion: keep the path below the expanded URL, and its last part too when the
        # destination is (or is to be treated as) an existing folder.
        prefix = source.expanded_url
        if prefix.endswith(delim):
            prefix = prefix[:-len(delim)]
        leaf = prefix.rpartition(delim)[2]
        valid_parent = src.startswith("gs://") or _strip_scheme(leaf) not in (".", "..")
        if not valid_parent and multiple_top_level:
            fail("gcloud.storage.cp", "Presence of multiple top-level sources and invalid expanded URL "
                 "make file name conflicts possible for URL: {}".format(src))
        conflict = not dest.exists and multiple_top_level
        treat_as_dir = (dest.exists and dest.container) or (not dest.exists and dest_url.text.endswith(dest_url.delimiter))
        if conflict or (valid_parent and treat_as_dir):
            if leaf not in (".", "..") and _strip_scheme(prefix) not in (".", ".."):
                prefix = prefix.rpartition(delim)[0]
            if not prefix:
                prefix = src.split("://", 1)[0] + "://"
        # gcloud splits the whole URL at the prefix and keeps what follows its first occurrence.
        suffix = delim + src.split(prefix)[1].lstrip(delim)
    else:
        bare = _strip_scheme(src)
        trimmed = bare[:-len(delim)] if bare.endswith(delim) else bare
        suffix = trimmed.rpartition(delim)[2] + (delim if trimmed != bare else "")
    if delim != dest_url.delimiter:
        suffix = suffix.replace(delim, dest_url.delimiter)
    base = dest_url.text.rstrip(dest_url.delimiter) if not dest_url.is_bucket() else dest_url.text.rstrip("/")
    return base + dest_url.delimiter + suffix.lstrip(dest_url.delimiter)


def storage_target(prog, text):
    """The file that holds URL string `text` (a gs:// object or a file:// path)."""
    if text.startswith("gs://"):
        url = SUrl(prog, text)
        return bucket_folder(prog, url) / url.name
    return Path(_strip_scheme(text))


def storage_copy(prog, src, target_text, no_clobber):
    """One copy task; returns an error line or None. Prints gcloud's `Copying` line."""
    target = storage_target(prog, target_text)
    if no_clobber and target.exists():
        status("Skipping existing destination item (no-clobber): {}".format(target_text))
        return None
    status("Copying {} to {}".format(src.text, target_text))
    try:
        if target_text.startswith("gs://"):
            # An object's name may not hold a prefix of another object's name as a file
            # here; the real bucket has no such limit (README: deviations).
            for parent in reversed(target.parents):
                if parent.is_file():
                    return "{} stand-in: {} is an object, so it cannot also be a prefix".format(
                        STANDIN_TAG, parent)
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_dir():
            return "{} stand-in: {} is a prefix, so it cannot also be an object".format(STANDIN_TAG, target_text)
        tmp = target.with_name(".{}.standin-{}".format(target.name, os.getpid()))
        shutil.copyfile(str(src.path), str(tmp))
        os.replace(str(tmp), str(target))
    except OSError as exc:
        return "{}: {}".format(target_text, exc.strerror or exc)
    return None


def upload_refused_on_this_worker(prog, urls):
    """GCLOUD_STANDIN_GCS_FAIL_WORKERS: an upload from those stand-in workers fails as a
    service account without write access to the bucket does."""
    worker = os.environ.get("GCLOUD_STANDIN_WORKER")
    if worker is None or not any(u.cloud for u in urls):
        return
    failing = set()
    for item in os.environ.get("GCLOUD_STANDIN_GCS_FAIL_WORKERS", "").split(","):
        if item.strip():
            if not item.strip().isdigit():
                fail(prog, "{} GCLOUD_STANDIN_GCS_FAIL_WORKERS must be a comma list of worker "
                           "indexes, not {!r}".format(STANDIN_TAG, item), 2)
            failing.add(int(item))
    if int(worker) in failing:
        fail(prog, "HTTPError 403: 123456789012-compute@developer.gserviceaccount.com does not "
                   "have storage.objects.create access to the Google Cloud Storage object. "
                   "Permission 'storage.objects.create' denied on resource (or it may not exist). "
                   "{} GCLOUD_STANDIN_GCS_FAIL_WORKERS".format(STANDIN_TAG))


def completed_line(count, size):
    status("  Completed files {0}/{0} | {1}B/{1}B".format(count, size))


def cmd_storage_cp(ns):
    spec = SPECS[STORAGE, "cp"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    if not ns.source:
        fail(prog, "Must have URL arguments if not reading paths from stdin.")
    check_credentials(prog)
    sources = [SUrl(prog, s) for s in ns.source]
    dest_url = SUrl(prog, ns.destination)
    upload_refused_on_this_worker(prog, [dest_url])
    dest = raw_destination(prog, dest_url)
    results, multiple_top_level, unmatched = expand_sources(prog, sources, ns.recursive)
    multiple = len(results) > 1
    if not dest_url.cloud:
        if multiple and not (dest.exists and dest.container):
            fail(prog, "Destination URL must name an existing directory. Provided: {}.".format(dest_url.path))
        if not multiple and dest_url.path.endswith(os.sep) and not os.path.isdir(dest_url.path):
            fail(prog, "Destination URL must name an existing directory if it ends with a delimiter. "
                       "Provided: {}.".format(dest_url.path))
    errors, size = [], 0
    for source in results:
        if (not multiple and not dest_url.cloud and source.resource.text != source.expanded_url
                and not (dest.exists and dest.container)):
            # _raise_if_destination_is_file_url_and_not_a_directory_or_pipe, for one file
            # found by recursion.
            fail(prog, "Destination URL must name an existing directory. Provided: {}.".format(dest_url.path))
        complete = (destination_is_container(dest, dest_url) or multiple
                    or source.resource.text != source.expanded_url)
        target = (complete_destination(dest, dest_url, source, multiple_top_level) if complete
                  else dest_url.text)
        if source.resource.text == target:
            fail(prog, "Destination URL {} already exists.".format(target))
        error = storage_copy(prog, source.resource, target, ns.no_clobber)
        if error:
            errors.append(error)
        else:
            size += source.resource.path.stat().st_size
    if errors:
        fail(prog, "\n".join(errors))
    if unmatched:
        fail(prog, "The following URLs matched no objects or files:\n{}".format("\n".join(unmatched)))
    completed_line(len(results), size)
    raise Exit(0)


def container_contents(prog, resource, recursive):
    """{relative name: resource} under a container; one level only without recursion."""
    out = {}
    for child in nested(resource):
        base = resource.text.rstrip("/") if resource.text.startswith("gs://") else resource.text.rstrip(os.sep)
        rel = child.text[len(base):].lstrip("/" if resource.text.startswith("gs://") else os.sep)
        if not recursive and ("/" in rel or os.sep in rel):
            continue
        out[rel.replace(os.sep, "/")] = child
    return out


def cmd_storage_rsync(ns):
    """rsync_command_util: SOURCE must be an existing container; DESTINATION is one, or
    where one is made. Copies what is missing or differs, deletes only with
    --delete-unmatched-destination-objects."""
    spec = SPECS[STORAGE, "rsync"]
    prog = spec.prog
    reject_not_emulated(spec, ns)
    check_credentials(prog)
    src_url, dest_url = SUrl(prog, ns.source), SUrl(prog, ns.destination)
    upload_refused_on_this_worker(prog, [dest_url])
    found = top_level(prog, src_url)
    if not found:
        fail(prog, "{}Did not find existing container at: {}".format(
            "Wildcard pattern matched nothing. " if _WILDCARD.search(src_url.raw) else "", src_url.raw))
    if len(found) > 1:
        fail(prog, "{} matched more than one URL: {}".format(src_url.raw, [r.text for r in found]))
    if not found[0].container:
        fail(prog, "{} matched non-container URL: {}".format(src_url.raw, found[0].text))
    dest_found = top_level(prog, dest_url)
    if len(dest_found) > 1:
        fail(prog, "{} matched more than one URL: {}".format(dest_url.raw, [r.text for r in dest_found]))
    if dest_found and not dest_found[0].container:
        fail(prog, "{} matched non-container URL: {}".format(dest_url.raw, dest_found[0].text))
    source_items = container_contents(prog, found[0], ns.recursive)
    dest_items = container_contents(prog, dest_found[0], ns.recursive) if dest_found else {}
    errors, count, size = [], 0, 0
    for rel, item in sorted(source_items.items()):
        there = dest_items.get(rel)
        if there is not None and (ns.no_clobber or _same_bytes(item.path, there.path)):
            continue
        error = storage_copy(prog, item, dest_url.join(rel.replace("/", dest_url.delimiter)), False)
        if error:
            errors.append(error)
        else:
            count += 1
            size += item.path.stat().st_size
    if ns.delete_unmatched_destination_objects:
        for rel, item in sorted(dest_items.items()):
            if rel not in source_items:
                status("Removing {}".format(item.text))
                os.remove(str(item.path))
    if errors:
        fail(prog, "\n".join(errors))
    completed_line(count, size)
    raise Exit(0)


def _same_bytes(a, b):
    try:
        if a.stat().st_size != b.stat().st_size:
            return False
        return a.read_bytes() == b.read_bytes()
    except OSError:
        return False
