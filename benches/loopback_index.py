#!/usr/bin/env python3
"""A loopback package index for benches/lab_fresh.sh: serves a folder of wheels so
that cuenv, uv and pip download the same bytes from 127.0.0.1, and the network does not decide.

  loopback_index.py gather LOCK INTO [REUSE]  put every linux-x86_64 wheel LOCK pins into INTO:
        kept if already there, else hard-linked (or symlinked) from REUSE when a file there has
        the pinned sha256, else downloaded once from https://pypi.org (the simple API's file
        with exactly that sha256: `pip download` may pick another build of the same version).
  loopback_index.py serve DIR PORT_FILE LOG   serve DIR on 127.0.0.1 (a free port, written to
        PORT_FILE once listening) until killed; one line per request appended to LOG:
        user-agent <TAB> method <TAB> path <TAB> status <TAB> body bytes sent <TAB> start <TAB> end
        (Unix seconds: when the request line arrived and when the last byte was sent).

What is served (what cuenv's src/fetch/pypi.rs and uv/pip ask for):
  GET /pypi/<project>/<version>/json  warehouse's version document: info.version, urls[] with
                                      filename, url, digests.sha256, size (404 if unknown)
  GET /pypi/<project>/json            the project document: info, urls, releases{version: [...]}
  GET /simple/ and /simple/<project>/ PEP 503 HTML (href ...#sha256=), or PEP 691 JSON when
                                      the Accept header asks for application/vnd.pypi.simple.v1+json
  GET/HEAD /files/<file name>         the wheel, with single byte ranges (HTTP 206; none, the
                                      whole file, when LOOPBACK_NO_RANGES=1 is set)
Project names are normalized as PEP 503 says; a wheel's project and version come from its name.
Sha256s are cached in DIR/.sha256.json keyed by name, size and mtime.
"""
import hashlib
import html
import json
import os
import re
import sys
import threading
import time
import tomllib
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def normalize(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(4 << 20):
            h.update(chunk)
    return h.hexdigest()


def hashes(folder):
    """{file name: sha256} of the wheels in folder, through the .sha256.json cache."""
    cache_path = os.path.join(folder, ".sha256.json")
    try:
        with open(cache_path) as f:
            cache = json.load(f)
    except (OSError, ValueError):
        cache = {}
    out, fresh = {}, {}
    for name in sorted(os.listdir(folder)):
        if not name.endswith(".whl"):
            continue
        st = os.stat(os.path.join(folder, name))
        key = [st.st_size, st.st_mtime_ns]
        hit = cache.get(name)
        sha = hit[2] if hit and hit[:2] == key else sha256_of(os.path.join(folder, name))
        out[name] = sha
        fresh[name] = key + [sha]
    if fresh != cache:
        with open(cache_path + ".tmp", "w") as f:
            json.dump(fresh, f)
        os.replace(cache_path + ".tmp", cache_path)
    return out


def pinned(lock_path):
    """[(project, version, sha256)] of the linux-x86_64 wheels a lab.lock pins (cuDNN and CUDA)."""
    with open(lock_path, "rb") as f:
        lock = tomllib.load(f)
    want = {}
    for p in lock["platforms"]["linux-x86_64"]["profiles"].values():
        if p.get("cudnn-source", "pypi") == "pypi" and "cudnn-sha256" in p:
            major = re.search(r"-cuda(\d+)-", p["cudnn-name"]).group(1)
            want[p["cudnn-sha256"]] = (f"nvidia-cudnn-cu{major}", p["cudnn-version"], p["cudnn-sha256"])
        for w in p.get("cuda-wheels", []):
            spec, sha = w.split(" sha256:")
            project, version = spec.split("==")
            want[sha] = (project, version, sha)
    return sorted(want.values())


def wheel_project_version(name):
    parts = name[: -len(".whl")].split("-")
    return normalize(parts[0]), parts[1]


def gather(lock_path, into, reuse=None):
    os.makedirs(into, exist_ok=True)
    have = set(hashes(into).values())
    for project, version, sha in pinned(lock_path):
        if sha in have:
            continue
        prefix = f"{project.replace('-', '_')}-{version}-"
        src = None
        if reuse and os.path.isdir(reuse):
            for name in sorted(os.listdir(reuse)):
                if name.startswith(prefix) and name.endswith(".whl") and sha256_of(os.path.join(reuse, name)) == sha:
                    src = os.path.join(reuse, name)
                    break
        if src:
            dst = os.path.join(into, os.path.basename(src))
            try:
                os.link(src, dst)
            except OSError:
                os.symlink(os.path.abspath(src), dst)
            print(f"linked {os.path.basename(src)} from {reuse}", file=sys.stderr)
            continue
        req = urllib.request.Request(f"https://pypi.org/simple/{project}/", headers={"Accept": SIMPLE_JSON})
        with urllib.request.urlopen(req) as r:
            files = json.load(r)["files"]
        match = [f for f in files if f.get("hashes", {}).get("sha256") == sha]
        if not match:
            sys.exit(f"pypi.org has no file of {project} with sha256 {sha}")
        name = match[0]["filename"]
        print(f"downloading {name} from pypi.org", file=sys.stderr)
        tmp = os.path.join(into, f".{name}.part")
        h = hashlib.sha256()
        with urllib.request.urlopen(match[0]["url"]) as r, open(tmp, "wb") as f:
            while chunk := r.read(4 << 20):
                h.update(chunk)
                f.write(chunk)
        if h.hexdigest() != sha:
            os.unlink(tmp)
            sys.exit(f"{name}: sha256 {h.hexdigest()}, but the lock pins {sha}")
        os.replace(tmp, os.path.join(into, name))
    hashes(into)
    print(into)


def serve(folder, port_file, log_path):
    files = {}  # name -> (project, version, sha256, size)
    for name, sha in hashes(folder).items():
        project, version = wheel_project_version(name)
        files[name] = (project, version, sha, os.path.getsize(os.path.join(folder, name)))
    log = open(log_path, "a", buffering=1)
    log_lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out in separate writes

        def log_message(self, *args):
            pass

        def parse_request(self):
            self.started = time.time()
            return super().parse_request()

        def record(self, status, sent):
            with log_lock:
                log.write(f"{self.headers.get('User-Agent', '-')}\t{self.command}\t{self.path}\t{status}\t{sent}\t{self.started:.3f}\t{time.time():.3f}\n")

        def reply(self, status, body, ctype):
            data = body.encode() if isinstance(body, str) else body
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            self.record(status, len(data) if self.command != "HEAD" else 0)

        def base(self):
            return f"http://{self.headers.get('Host', '127.0.0.1')}"

        def entry(self, name):
            project, version, sha, size = files[name]
            return {
                "filename": name,
                "url": f"{self.base()}/files/{name}",
                "digests": {"sha256": sha},
                "size": size,
                "packagetype": "bdist_wheel",
                "yanked": False,
            }

        def do_HEAD(self):
            self.do_GET()

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            parts = [p for p in path.split("/") if p]
            if parts[:1] == ["files"] and len(parts) == 2 and parts[1] in files:
                return self.send_file(parts[1])
            if parts[:1] == ["pypi"] and len(parts) in (3, 4) and parts[-1] == "json":
                project = normalize(parts[1])
                names = [n for n, f in files.items() if f[0] == project]
                if not names:
                    return self.reply(404, "not found", "text/plain")
                if len(parts) == 4:
                    names = [n for n in names if files[n][1] == parts[2]]
                    if not names:
                        return self.reply(404, "not found", "text/plain")
                    doc = {"info": {"name": project, "version": parts[2]}, "urls": [self.entry(n) for n in names]}
                else:
                    releases = {}
                    for n in names:
                        releases.setdefault(files[n][1], []).append(self.entry(n))
                    doc = {"info": {"name": project, "version": max(releases)}, "urls": [], "releases": releases}
                return self.reply(200, json.dumps(doc), "application/json")
            if parts[:1] == ["simple"] and len(parts) <= 2:
                want_json = SIMPLE_JSON in self.headers.get("Accept", "")
                if len(parts) == 1:
                    projects = sorted({f[0] for f in files.values()})
                    if want_json:
                        return self.reply(200, json.dumps({"meta": {"api-version": "1.0"}, "projects": [{"name": p} for p in projects]}), SIMPLE_JSON)
                    links = "".join(f'<a href="/simple/{p}/">{p}</a>\n' for p in projects)
                    return self.reply(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n", "text/html")
                project = normalize(parts[1])
                names = sorted(n for n, f in files.items() if f[0] == project)
                if not names:
                    return self.reply(404, "not found", "text/plain")
                if want_json:
                    doc = {
                        "meta": {"api-version": "1.0"},
                        "name": project,
                        "files": [{"filename": n, "url": f"/files/{n}", "hashes": {"sha256": files[n][2]}, "size": files[n][3]} for n in names],
                    }
                    return self.reply(200, json.dumps(doc), SIMPLE_JSON)
                links = "".join(f'<a href="/files/{html.escape(n)}#sha256={files[n][2]}">{html.escape(n)}</a>\n' for n in names)
                return self.reply(200, f"<!DOCTYPE html><html><body>\n{links}</body></html>\n", "text/html")
            return self.reply(404, "not found", "text/plain")

        def send_file(self, name):
            size = files[name][3]
            start, end = 0, size - 1
            status = 200
            # LOOPBACK_NO_RANGES=1: a server that answers every range request with the whole file
            # (cuenv then downloads a wheel whole instead of importing it while it streams).
            rng = None if os.environ.get("LOOPBACK_NO_RANGES") == "1" else self.headers.get("Range")
            if rng:
                m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng.strip())
                if not m or (not m.group(1) and not m.group(2)):
                    return self.reply(416, "bad range", "text/plain")
                if m.group(1):
                    start = int(m.group(1))
                    end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
                else:
                    start = max(0, size - int(m.group(2)))
                if start > end:
                    return self.reply(416, "bad range", "text/plain")
                status = 206
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("Content-Length", str(end - start + 1))
            if status == 206:
                self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
            self.end_headers()
            sent = 0
            if self.command != "HEAD":
                with open(os.path.join(folder, name), "rb") as f:
                    try:
                        sent = self.connection.sendfile(f, start, end - start + 1)
                    except (BrokenPipeError, ConnectionResetError):
                        # The client closed early: a streamed import stops reading once the
                        # last member's data is in (the central directory came by a range).
                        sent = f.tell() - start
                        self.close_connection = True
            self.record(status, sent)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.replace(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "gather":
        gather(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif len(sys.argv) == 5 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(__doc__)
