"""A Streamlit client without a browser: Streamlit's own websocket protocol, for load tests.

One :class:`Session` is what one browser tab is to the server: it connects to
``/_stcore/stream``, asks for a page with a ``rerun_script`` BackMsg (a ``ClientState``
holding the page and the widget values), and reads ForwardMsgs until ``script_finished``.
From the deltas it learns every widget's id by its user key, so a test or benchmark can
say ``await s.set("couplet_upper", "春风")`` as a person would type it. Exceptions the app
shows (``st.exception`` elements, the red box of an uncaught error) and error alerts are
collected per run. One asyncio loop drives dozens of sessions::

    async with Session("http://127.0.0.1:8765") as s:
        run = await s.open("couplets")
        assert run.ok, run.problems

The widget values travel the way the browser sends them: text as ``string_value``, a toggle
as ``bool_value``, a slider as ``double_array_value``, a selectbox or radio as the option's
label, a button as a one-shot ``trigger_value``. A widget inside an ``st.fragment`` reruns
only its fragment, as in the browser. As a browser does, every rerun carries the value of each
widget the page shows (the one just set, and the others as the server last drew or the
client last set them; a whole run forgets the widgets it did not draw): a value left out is
a value the server may forget (the sidebar's language switch was, after a widget had been
set and the page opened again).
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import time
import urllib.request
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from websockets.asyncio.client import connect

FINISHED = ForwardMsg.ScriptFinishedStatus
ERROR_ALERT = 1  # Alert.Format.ERROR


@dataclass
class Widget:
    id: str
    kind: str  # the Element field: text_input, checkbox, slider, selectbox, radio, button, …
    fragment_id: str = ""
    options: tuple[str, ...] = ()  # a selectbox's or radio's labels
    bounds: tuple[float, float] | None = None  # a slider's min and max


@dataclass
class Run:
    """One script run as the client saw it: how long until ``script_finished``, and what went wrong."""

    seconds: float
    status: str  # FINISHED_SUCCESSFULLY, FINISHED_FRAGMENT_RUN_SUCCESSFULLY, … or "timeout"
    exceptions: list[str] = field(default_factory=list)  # "Type: message" of each exception element
    errors: list[str] = field(default_factory=list)  # st.error alerts
    elements: int = 0
    bytes: int = 0
    markdown: str = ""  # the text of every markdown element (st.write, st.markdown, captions), a line each

    @property
    def ok(self) -> bool:
        return (
            self.status.startswith("FINISHED")
            and self.status != "FINISHED_WITH_COMPILE_ERROR"
            and not (self.exceptions)
        )

    @property
    def problems(self) -> list[str]:
        return ([] if self.ok else [self.status]) + self.exceptions


def user_key(widget_id: str) -> str:
    """``$$ID-<hash>-couplet_upper`` → ``couplet_upper`` (an id without a user key stays whole)."""
    head, _, key = widget_id.partition("-")
    return widget_id.split("-", 2)[2] if head == "$$ID" and widget_id.count("-") >= 2 else key or widget_id


class Session:
    """One browser-less session on a running Streamlit server (see the module docstring)."""

    def __init__(self, url: str, timeout: float = 180.0, cookies: bool = False):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.cookies: dict[str, str] = {}  # with cookies=True: those the first page load set
        self._want_cookies = cookies
        self.widgets: dict[str, Widget] = {}
        # widget id → (widget, value): every known widget's value, sent with each rerun as a browser does
        self.values: dict[str, tuple[Widget, object]] = {}
        self._drawn: set[str] = set()  # the widgets this run drew
        self.page_hash = ""
        self.pages: dict[str, str] = {}  # url path → page script hash, from the navigation message
        self._ws = None
        self._inbox: asyncio.Queue[tuple[ForwardMsg, int]] = asyncio.Queue()
        self._reader: asyncio.Task | None = None
        self.closed_reason: str | None = None
        self.query_string = ""  # the URL's query string each run is sent with (``open(query=…)``)

    async def __aenter__(self) -> Session:
        await self.connect()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def connect(self) -> None:
        """Open the websocket; with ``cookies=True`` first load the page as a browser does and send
        the cookies it set (a sticky proxy's, Streamlit's XSRF token) with the websocket."""
        if self._want_cookies:
            self.cookies = await asyncio.to_thread(page_cookies, self.url)
        header = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        ws_url = "ws" + self.url.removeprefix("http") + "/_stcore/stream"
        self._ws = await connect(
            ws_url,
            subprotocols=["streamlit"],
            additional_headers={"Cookie": header} if header else None,
            origin=self.url,
            max_size=None,  # a Transformer page's messages run to megabytes
            open_timeout=self.timeout,
            ping_interval=None,
        )
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        if self._ws is not None:
            await self._ws.close()
        if self._reader is not None:
            self._reader.cancel()
            await asyncio.gather(self._reader, return_exceptions=True)

    async def _read(self) -> None:
        try:
            async for data in self._ws:
                msg = ForwardMsg()
                msg.ParseFromString(data)
                await self._inbox.put((msg, len(data)))
        except Exception as err:  # the connection dropped: the waiting run reports it
            self.closed_reason = f"{type(err).__name__}: {err}"
        finally:
            self.closed_reason = self.closed_reason or "connection closed"
            await self._inbox.put((None, 0))

    async def open(self, page: str = "", query: str | None = None) -> Run:
        """Navigate to ``page`` (its url path, "" for the default page), as a deep link does; with
        ``query`` (``"lang=zh"``) the link's query string, sent with this run and every later one (a
        browser keeps its URL's), until the next ``open`` gives another."""
        self.widgets.clear()
        if query is not None:
            self.query_string = query
        return await self._rerun(page_name=page, page_hash="")

    async def rerun(self) -> Run:
        return await self._rerun()

    async def set(self, key: str, value) -> Run:
        """Give the widget with user key ``key`` a new value and wait for the run it starts."""
        widget = self.widgets.get(key)
        if widget is None:
            raise KeyError(f"no widget {key!r} on this page; known: {', '.join(sorted(self.widgets))}")
        return await self._rerun(changed=(widget, value), fragment_id=widget.fragment_id)

    async def _rerun(self, page_name=None, page_hash=None, changed=None, fragment_id="") -> Run:
        msg = BackMsg()
        state = msg.rerun_script
        state.page_script_hash = self.page_hash if page_hash is None else page_hash
        state.page_name = page_name or ""
        state.query_string = self.query_string
        state.fragment_id = fragment_id
        if changed is not None:
            self.values[changed[0].id] = changed
        for widget, value in self.values.values():
            _encode(state.widget_states.widgets.add(), widget, value)
        if changed is not None and changed[0].kind in TRIGGERS:  # a click is sent once
            del self.values[changed[0].id]
        start = time.perf_counter()
        self._drawn = set()
        await self._ws.send(msg.SerializeToString())
        return await self._wait(start)

    async def _wait(self, start: float) -> Run:
        run = Run(0.0, "timeout")
        deadline = start + self.timeout
        while True:
            try:
                msg, size = await asyncio.wait_for(
                    self._inbox.get(), max(0.01, deadline - time.perf_counter())
                )
            except TimeoutError:
                break
            if msg is None:
                run.status = f"disconnected ({self.closed_reason})"
                break
            run.bytes += size
            self._take(msg, run)
            if msg.WhichOneof("type") == "script_finished":
                run.status = FINISHED.Name(msg.script_finished)
                if msg.script_finished == FINISHED.FINISHED_SUCCESSFULLY:  # the browser's removeInactive
                    self.values = {k: v for k, v in self.values.items() if k in self._drawn}
                if msg.script_finished != FINISHED.FINISHED_EARLY_FOR_RERUN:
                    break
        run.seconds = time.perf_counter() - start
        return run

    def _take(self, msg: ForwardMsg, run: Run) -> None:
        kind = msg.WhichOneof("type")
        if kind == "new_session":
            self.page_hash = msg.new_session.page_script_hash
        elif kind == "navigation":
            self.page_hash = msg.navigation.page_script_hash or self.page_hash
            self.pages = {p.url_pathname: p.page_script_hash for p in msg.navigation.app_pages}
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            run.elements += 1
            self._element(msg.delta.new_element, msg.delta.fragment_id, run)

    def _element(self, element, fragment_id: str, run: Run) -> None:
        kind = element.WhichOneof("type")
        body = getattr(element, kind) if kind else None
        if kind == "exception":
            run.exceptions.append(f"{body.type}: {body.message}")
        elif kind == "alert" and body.format == ERROR_ALERT:
            run.errors.append(body.body)
        elif kind == "markdown":
            run.markdown += body.body + "\n"
        widget_id = getattr(body, "id", "") if body is not None and hasattr(body, "id") else ""
        if widget_id:
            options = tuple(getattr(body, "options", ()) or ())
            bounds = (body.min, body.max) if kind == "slider" else None
            widget = Widget(widget_id, kind, fragment_id, options, bounds)
            self.widgets[user_key(widget_id)] = widget
            self._drawn.add(widget_id)
            known = self.values.get(widget_id)
            value = drawn_value(body, kind, None if known is None else known[1])
            if value is not None:
                self.values[widget_id] = (widget, value)


TRIGGERS = ("button", "download_button")


def drawn_value(body, kind: str, known):
    """The value a browser holds for a widget the server has just drawn: the one the server
    set (``set_value``), else the one it already held (``known``), else the widget's default;
    None for none (``value=None``, ``index=None``) or a kind this client does not keep
    (buttons, components, a select slider…)."""
    if kind in ("text_input", "text_area", "checkbox", "selectbox", "radio") or (
        kind == "slider" and not body.options
    ):
        plain = kind in ("checkbox", "slider")  # fields without presence: always a value
        if body.set_value:
            field = "raw_value" if kind in ("selectbox", "radio") else "value"
            value = getattr(body, field) if plain or body.HasField(field) else None
        elif known is not None:
            return known
        elif kind in ("selectbox", "radio"):
            index = body.default if body.HasField("default") else -1
            value = body.options[index] if 0 <= index < len(body.options) else None
        else:
            value = body.default if plain or body.HasField("default") else None
        return list(value) if kind == "slider" else value
    return None


def page_cookies(url: str) -> dict[str, str]:
    """The cookies a GET of ``url``/ sets, by name."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(url.rstrip("/") + "/", timeout=30) as response:
        response.read()
    return {c.name: c.value for c in jar}


def _encode(state, widget: Widget, value) -> None:
    """Put ``value`` into the WidgetState ``state`` the way the browser sends this kind of widget."""
    state.id = widget.id
    if widget.kind in ("button", "download_button"):
        state.trigger_value = bool(value)
    elif widget.kind == "checkbox":
        state.bool_value = bool(value)
    elif widget.kind == "slider":
        state.double_array_value.data[:] = [
            float(v) for v in (value if isinstance(value, list | tuple) else [value])
        ]
    elif widget.kind == "number_input":
        state.double_value = float(value)
    elif widget.kind in ("text_input", "text_area", "selectbox", "radio"):
        state.string_value = str(value)
    else:
        raise TypeError(f"setting a {widget.kind} widget is not supported by this client")
