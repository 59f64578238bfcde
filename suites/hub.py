"""A data set from the Hugging Face hub, or an error within seconds when the hub is out of reach.

A suite without its local mirror falls back to the hub. Offline, ``datasets.load_dataset`` and
``hf_hub_download`` retry for about half a minute before they give up, so a fresh machine
without the mirror waited that long for the error that names the mirror's folder. Here the
hub's endpoint is asked for any answer first (one ``HEAD`` request, through the proxies the
environment names). Only a sure sign that nothing is there is a :class:`HubUnreachable` at
once: a name that does not resolve, a refused or unroutable connection, or no answer within
:data:`PROBE_TIMEOUT_S`. Anything else (an HTTP answer of any status, a TLS handshake this
process does not trust, as behind a proxy whose certificate only the libraries are told of)
leaves the library to do the rest as before.

With ``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set, nothing is asked: the libraries then
read their own cache (a data set fetched on an earlier, online run), failing fast themselves.
"""

from __future__ import annotations

import errno
import os
import socket
import threading
from typing import Any

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 5.0
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
_TRUE = frozenset(("1", "ON", "YES", "TRUE"))  # what huggingface_hub reads as set
_NO_ROUTE = frozenset((errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EADDRNOTAVAIL))

_reached: set[str] = set()  # endpoints that answered in this process
_lock = threading.Lock()


class HubUnreachable(OSError):
    """The hub's endpoint gave no answer: the machine is offline, or a proxy or DNS is missing."""


def hub_endpoint() -> str:
    """The hub's address: ``HF_ENDPOINT`` (a mirror of the hub), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_mode() -> bool:
    """Whether the user asked the Hugging Face libraries to stay offline."""
    return any(os.environ.get(name, "").strip().upper() in _TRUE for name in OFFLINE_VARIABLES)


def check_hub_reachable(timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Return when the hub answers (or offline mode is set); else raise
    :class:`HubUnreachable`, saying why and what to do."""
    if offline_mode():
        return
    endpoint = hub_endpoint()
    with _lock:
        if endpoint in _reached:
            return
    # Here, not at the top: urllib.request brings ssl and http.client (~20 ms), and every
    # process that imports a stdio suite's module (the reward API's) imports this one.
    import urllib.error
    import urllib.request

    try:
        request = urllib.request.Request(endpoint + "/", method="HEAD")
        with urllib.request.urlopen(request, timeout=timeout_s):  # noqa: S310 - http(s) only
            pass
    except ValueError:  # not a URL this process can ask: the library says what is wrong
        return
    except urllib.error.HTTPError:
        pass  # an answer, whatever its status: the hub is there
    except (urllib.error.URLError, OSError) as exc:
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else exc
        if nothing_there(reason):
            raise HubUnreachable(
                f"the Hugging Face hub at {endpoint} cannot be reached ({reason}); "
                "set HF_HUB_OFFLINE=1 to read a copy in the Hugging Face cache instead"
            ) from None
    with _lock:
        _reached.add(endpoint)


def nothing_there(reason: object) -> bool:
    """Whether a failed request's ``reason`` shows that nothing answers at the endpoint (so
    the libraries' retries would only wait): no such name, a refused or unroutable
    connection, or no answer in time."""
    if isinstance(reason, (socket.gaierror, ConnectionRefusedError, TimeoutError)):
        return True
    return isinstance(reason, OSError) and reason.errno in _NO_ROUTE


def load_hub_dataset(name: str, *args: Any, **kwargs: Any) -> Any:
    """``datasets.load_dataset(name, *args, **kwargs)``, after :func:`check_hub_reachable`."""
    check_hub_reachable()
    import datasets

    return datasets.load_dataset(name, *args, **kwargs)
