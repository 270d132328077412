"""Where a command's output goes: reports on standard output, messages and the bar on standard
error, in whatever encoding the streams have.

One ``Terminal`` per command. Reports (``report``, ``json``) go to standard output; messages
(``note``, ``error``) and the progress bar to standard error. While the bar is live and both
streams are the same terminal, reports are printed through the bar's console, the one
console that knows where the bar is: it lifts the bar, prints the report above it and draws
the bar again, so a report never lands inside the bar. Lifting and drawing it again costs
some 350 µs, so reports under the bar are held for up to ``HOLD_SECONDS`` (or until
``HOLD_LINES`` are held) and printed together, the bar drawn again once for them; anything
else written through the ``Terminal``, and the bar's end, prints those held first. When the
streams differ (a pipe, a file) each simply gets its own lines, and the bar is never drawn
on a terminal that records are being written to.

Nothing the streams cannot encode reaches them: cards are written by their names (``AD``,
``TC``) where the suit symbols cannot be encoded, JSON lines escape what cannot
(``\\u015f``), and any other character falls back to a plain look-alike or ``?``
(``prepare_streams`` sets that up once, before any output).
"""

from __future__ import annotations

import codecs
import contextlib
import errno
import io
import re
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Protocol, cast

from kingrec.cards import RANK_LETTERS, RANK_NAMES, SUIT_LETTERS, SUIT_SYMBOLS, card_name

from .streams import can_encode, is_terminal, same_terminal

if TYPE_CHECKING:  # loaded when first used (a bar, a report, a JSON line): start-up stays short
    from rich.console import Console, RenderableType
    from rich.progress import Progress, ProgressColumn

__all__ = ["Bar", "Columns", "Terminal"]

# Reports under a live bar are held, then printed together: printed one at a time, each
# lifted the bar and drew it again (`kingrec validate` of a file of one match 20,000 times
# on a terminal: 40,000 lines in 19 s, where a pipe took 1.5 s). No one can tell 0.1 s.
HOLD_SECONDS = 0.1
HOLD_LINES = 512

# The columns of a progress bar, made only when the bar is drawn (so rich.progress is loaded
# only then): a function returning them.
Columns = Callable[[], "Sequence[str | ProgressColumn]"]


class Bar(Protocol):
    """What a command does with its progress bar: a rich ``Progress``, or one not drawn."""

    def add_task(self, description: str, /, *, total: float | None = ...) -> Any: ...

    def update(
        self, task_id: Any, /, *, completed: float | None = ..., advance: float | None = ...
    ) -> None: ...

    def remove_task(self, task_id: Any, /) -> None: ...


class _HiddenBar:
    """The bar of a command whose bar is not shown: it counts its tasks and draws nothing."""

    def __init__(self) -> None:
        self._tasks = 0

    def add_task(self, description: str, /, *, total: float | None = None) -> int:
        self._tasks += 1
        return self._tasks

    def update(
        self, task_id: Any, /, *, completed: float | None = None, advance: float | None = None
    ) -> None:
        pass

    def remove_task(self, task_id: Any, /) -> None:
        pass


# Patterns are compiled by re on first use (and kept in its cache): compiling the three when
# the module loads cost a run that uses none of them some 3 M instructions.
_SYMBOL_CARD = f"([{SUIT_SYMBOLS}])(10|[2-9JQKA])"


def _named_card(found: re.Match[str]) -> str:
    rank = RANK_LETTERS[RANK_NAMES.index(found.group(2))]
    return rank + SUIT_LETTERS[SUIT_SYMBOLS.index(found.group(1))]


def _console(file: IO[str]) -> Console:
    """A rich console on ``file`` that leaves a closed pipe to the command line (exit 141, not
    rich's 1). Made on first use: rich.console takes tens of milliseconds to import."""
    from rich.console import Console

    class _Console(Console):
        _tty: bool | None = None

        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of the output went away")

        @property
        def is_terminal(self) -> bool:
            # Read once: rich asks on each print (three isatty calls and the environment,
            # some 45 µs a report on a terminal, a third of its cost), and whether the
            # stream is a terminal does not change while a command runs.
            if self._tty is None:
                self._tty = bool(Console.is_terminal.fget(self))  # type: ignore[attr-defined]
            return self._tty

    return _Console(file=file, highlight=False, emoji=False, soft_wrap=True)


class Terminal:
    """The output streams of one command."""

    def __init__(self) -> None:
        self.stdout = sys.stdout
        self.stderr = sys.stderr
        self._out: Console | None = None  # the consoles, made when first used
        self._err: Console | None = None
        self._bar: Progress | None = None  # a live bar on the terminal of both streams
        self._drawing = False  # a bar is live on standard error
        self._held: list[str] = []  # reports under a live bar, not printed yet (``_hold``)
        self._holding = threading.RLock()  # over _held, _timer, _failed and their printing
        self._timer: threading.Timer | None = None  # prints _held when it goes off
        self._failed: BaseException | None = None  # what printing them on the timer raised
        self.symbols = can_encode(self.stdout, SUIT_SYMBOLS)
        self.err_symbols = can_encode(self.stderr, SUIT_SYMBOLS)

    @property
    def out(self) -> Console:
        """The console for reports: the bar's own while it is live on this terminal."""
        bar = self._bar
        if bar is not None and bar.live.is_started:
            return bar.console
        if self._out is None:
            self._out = _console(self.stdout)
        return self._out

    @property
    def err(self) -> Console:
        """The console for messages and the bar, on standard error."""
        if self._err is None:
            self._err = _console(self.stderr)
        return self._err

    # -- text --------------------------------------------------------------------------------

    def card(self, card: int) -> str:
        """A card for a report: ``♦A``, or ``AD`` where the symbols cannot be written;
        ``#60`` for a byte that is no card."""
        if not 0 <= card < 52:
            return f"#{card}"
        if self.symbols:
            return SUIT_SYMBOLS[card // 13] + RANK_NAMES[card % 13]
        return card_name(card)

    def sentence(self, text: str, *, stderr: bool = False) -> str:
        """A library sentence for a report (or for standard error), with its cards by name
        where the stream cannot write the suit symbols, and no control character (``shown``)."""
        text = shown(text)
        if self.err_symbols if stderr else self.symbols:
            return text
        return re.sub(_SYMBOL_CARD, _named_card, text)

    # -- output ------------------------------------------------------------------------------

    def report(self, markup: RenderableType = "") -> None:
        """One report (rich markup, or a renderable) on standard output."""
        if isinstance(markup, str):
            if self._writes_plain():
                text = _plain(markup)
                if text.isprintable():
                    self.stdout.write(text + "\n")
                    return
            elif self._bar_live():
                self._hold(markup)
                return
        self._release()
        self.out.print(markup)

    def _bar_live(self) -> bool:
        bar = self._bar
        return bar is not None and bar.live.is_started

    # A timer's thread, made here so that a test can make its own.
    _Timer = threading.Timer

    def _hold(self, markup: str) -> None:
        """Hold a report under the live bar: printed with the others held once the timer
        goes off, ``HOLD_LINES`` are held, or anything else is written."""
        with self._holding:
            self._raise_failed()
            self._held.append(markup)
            if len(self._held) < HOLD_LINES:
                if self._timer is None:
                    self._timer = self._Timer(HOLD_SECONDS, self._release_on_timer)
                    self._timer.daemon = True
                    self._timer.start()
                return
        self._release()

    def _release(self) -> None:
        """Print the reports held under the bar, in one print (one bar drawn again)."""
        with self._holding:
            timer, self._timer = self._timer, None
            if timer is not None:
                timer.cancel()
            self._raise_failed()
            held, self._held = self._held, []
            if held:
                self.out.print(*held, sep="\n")

    def _release_on_timer(self) -> None:
        # On the timer's thread: what printing raises (a closed terminal) is the command's
        # to meet, on its own thread, when it next writes.
        try:
            self._release()
        except BaseException as exc:  # raised again on the command's thread
            with self._holding:
                self._failed = self._failed or exc

    def _raise_failed(self) -> None:
        failed, self._failed = self._failed, None
        if failed is not None:
            raise failed

    def _writes_plain(self) -> bool:
        """Whether a report is written as its markup's plain text: no live bar here, and the
        console draws no style (a pipe or a file, unless FORCE_COLOR asks for colours). Its
        console then writes just that for a printable line, through some 300 µs of rich's
        machinery a line (20,000 repeats in a file: ~12 s of a run's 14 s, cProfile)."""
        if self._bar_live():
            return False
        out = self.out
        return out.color_system is None and not out.is_terminal and not out.record

    def line(self, text: str) -> None:
        """One line of plain text (no markup) on standard output, as ``report`` writes its
        escaped form: directly when no bar is live and it is printable, so rich is not loaded
        for a command's last line."""
        if not self._bar_live() and text.isprintable():
            self.stdout.write(text + "\n")
            return
        self.report(escape(text))

    def json(self, obj: Any, render: Callable[..., str] | None = None) -> None:
        """One JSON line on standard output, as ``render`` writes ``obj`` (``json_line``, or
        ``report_line`` for a report): raw characters where the stream can encode them,
        ``\\u`` escapes where it cannot; never a raw line separator."""
        if render is None:
            from kingrec.jsonl import json_line  # here: most commands never write JSON

            render = json_line
        line = render(obj)
        if not line.isascii() and not can_encode(self.stdout, line):
            line = render(obj, ascii_only=True)
        if self._bar_live():
            from rich.text import Text

            self._release()
            self.out.print(Text(line), soft_wrap=True)
        else:
            self.stdout.write(line + "\n")

    def tell(self, text: str) -> None:
        """A line of plain text on standard error (a command's closing summary)."""
        self._message(text)

    def records_stream(self) -> BinaryIO:
        """Standard output for JSON records written as bytes: UTF-8 where the stream takes
        it, else every character beyond ASCII escaped (``\\u015f``), which any ASCII-based
        encoding holds and every JSON reader reads back the same."""
        stream = self.stdout.buffer
        encoding = getattr(self.stdout, "encoding", None) or "utf-8"
        try:
            utf8 = codecs.lookup(encoding).name == "utf-8"
        except LookupError:
            utf8 = False
        return stream if utf8 else cast(BinaryIO, _AsciiJson(stream))

    def note(self, message: str) -> None:
        """A line for the person at the terminal, on standard error: ``kingrec: ...``."""
        self._message(f"kingrec: {message}")

    def error(self, message: str) -> None:
        """An error line on standard error: ``kingrec: error: ...``."""
        self._message(f"kingrec: error: {message}")

    def _message(self, line: str) -> None:
        # Through the bar's console (``err``), which lifts a live bar out of the way; reports
        # written so far come first, also when both streams go to one pipe.
        self.flush()
        text = self.sentence(line, stderr=True)
        if not self._drawing and text.isprintable():
            # What rich would write for it, without loading rich: printable text has no tab
            # to expand and no control code to strip.
            self.stderr.write(text + "\n")
            self.flush()
            return
        self.err.print(escape(text))

    def flush(self) -> None:
        """Everything written so far out: the reports held under the bar, then the streams."""
        self._release()
        for stream in (self.stdout, self.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):  # a closed stream
                stream.flush()

    # -- the progress bar --------------------------------------------------------------------

    def wants_bar(self, asked: bool | None, *, records_to_stdout: bool = False) -> bool:
        """Whether to draw a bar: as asked, else when standard error is a terminal; never on
        the terminal that records are written to."""
        if records_to_stdout and same_terminal(self.stdout, self.stderr):
            return False
        return is_terminal(self.stderr) if asked is None else asked

    @contextmanager
    def progress(self, columns: Columns, *, show: bool) -> Iterator[Bar]:
        """A transient progress bar on standard error with the ``columns()`` made then
        (``show=False``: one that draws nothing, and rich.progress is never loaded)."""
        if not show:
            self.flush()
            yield _HiddenBar()
            return
        from rich.progress import Progress

        shared = same_terminal(self.stdout, self.stderr)
        bar = Progress(
            *columns(),
            console=self.err,
            transient=True,
            redirect_stdout=shared,  # stray writes to stdout then go above the bar too
            redirect_stderr=True,
        )
        self.flush()
        self._bar = bar if shared else None
        self._drawing = True
        try:
            with bar:
                try:
                    yield bar
                finally:
                    self._release()  # above the bar, before it is gone
        finally:
            self._bar = None
            self._drawing = False


_BEYOND_ASCII = "[^\x00-\x7f]"


# What a terminal would act on rather than show: the C0 controls but tab and newline, DEL
# and the C1 controls (ESC starts a sequence that can retitle the window, clear the screen or
# recolour what follows; a carriage return lets later text overwrite the line).
_CONTROLS = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"


def shown(text: str) -> str:
    """``text`` from outside (a record's names and ids, a file name, a stored value) with each
    control character written as its ``\\u`` escape, so that it is seen, not obeyed."""
    return re.sub(_CONTROLS, lambda found: f"\\u{ord(found.group()):04x}", text)


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """``1 match``, ``3 matches``: a count and its noun, in the plural unless it is one."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


def _plain(markup: str) -> str:
    """The text ``markup`` shows, its styles dropped, as ``Console.print`` renders it (no
    emoji codes, no highlighting: the consoles' settings)."""
    from rich.markup import render  # here: most commands never load rich

    return render(markup, emoji=False).plain


def escape(text: str) -> str:
    """``shown(text)`` with rich's markup escaped too: text from outside inside markup."""
    from rich.markup import escape as markup_escape  # here: most commands never load rich

    return markup_escape(shown(text))


def _escape(found: re.Match[str]) -> str:
    code = ord(found.group())
    if code > 0xFFFF:  # a surrogate pair, as JSON spells characters beyond the BMP
        code -= 0x10000
        return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"
    return f"\\u{code:04x}"


class _AsciiJson(io.RawIOBase):
    """Writes UTF-8 JSON text on as ASCII, every other character as a ``\\u`` escape.

    Valid for JSON: outside its strings JSON is ASCII, and inside them an escape means the
    character it stands for.
    """

    def __init__(self, inner: IO[bytes]) -> None:
        super().__init__()
        self._inner = inner
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        raw = bytes(data)
        text = self._decoder.decode(raw)
        self._inner.write(re.sub(_BEYOND_ASCII, _escape, text).encode("ascii"))
        return len(raw)

    def flush(self) -> None:
        self._inner.flush()
