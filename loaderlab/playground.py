"""A playground: widget controls that re-run a measurement once they have been still.

Notebook 18's plumbing, kept out of the lesson: the notebook builds the controls (one widget per
knob of a settings dataclass) and passes the functions that run the loader and describe a run;
``Playground`` waits until the controls have been still for ``debounce_s`` (dragging a slider
starts one run, not ten), runs in a background thread so the controls stay live, shows progress
and how long the redraw took, and lets a newer change replace a pending one. ipywidgets is
imported here only, so ``import loaderlab`` stays light.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import ipywidgets as widgets

CUSTOM = "(yours)"  # the preset shown once a control has been moved by hand


class Playground:
    """Controls, presets, a progress bar, a status line, a report, a picture and a code line.

    ``settings(**values)`` builds the settings from the controls' values (a dataclass whose
    fields are the controls' names); ``run(settings, on_progress)`` measures them and returns a
    result; ``picture(result)`` returns a matplotlib figure, ``report(result)`` and
    ``call(result)`` one text each; ``notice(settings)`` may return a sentence shown while a run
    starts (e.g. that it will take long). A preset sets every enabled control at once.
    """

    def __init__(
        self,
        controls: Mapping[str, widgets.ValueWidget],
        presets: Mapping[str, Any],
        settings: Callable[..., Any],
        run: Callable[[Any, Callable[[float], None]], Any],
        picture: Callable[[Any], Any],
        report: Callable[[Any], str],
        call: Callable[[Any], str],
        notice: Callable[[Any], str] | None = None,
        preset: str | None = None,
        debounce_s: float = 0.5,
        timer: Callable[..., Any] = threading.Timer,
    ):
        self.controls, self.presets, self.settings = dict(controls), dict(presets), settings
        self._run, self._picture, self._report, self._call = run, picture, report, call
        self._notice, self.debounce_s = notice, debounce_s
        self._timer = timer  # threading.Timer; tests pass a fake that fires when told
        self.timer: Any = None  # the pending redraw's timer
        self.lock = threading.Lock()  # one redraw at a time
        self.redraw_s: list[float] = []  # seconds each redraw took, run and picture
        self._quiet = False  # True while a preset sets the controls: no run per control
        self.progress = widgets.FloatProgress(
            value=1.0, min=0, max=1.0, description="run", layout=widgets.Layout(width="430px")
        )
        self.status, self.summary, self.code = widgets.HTML(), widgets.HTML(), widgets.HTML()
        self.image = widgets.Image(format="png")
        self.preset = widgets.ToggleButtons(
            options=[CUSTOM, *self.presets],
            value=preset or CUSTOM,
            description="preset",
            style={"description_width": "60px", "button_width": "140px"},
        )
        self.preset.observe(self._on_preset, names="value")
        for control in self.controls.values():
            control.observe(self._on_control, names="value")

    def widget(self, left: list[str], right: list[str]) -> widgets.VBox:
        """The whole playground: presets, two columns of controls (by name), progress and status,
        report, picture and the code line."""
        columns = [widgets.VBox([self.controls[name] for name in names]) for names in (left, right)]
        return widgets.VBox(
            [
                self.preset,
                widgets.HBox(columns),
                widgets.HBox([self.progress, self.status]),
                self.summary,
                self.image,
                self.code,
            ]
        )

    def current(self) -> Any:
        """The settings the controls show."""
        return self.settings(**{name: control.value for name, control in self.controls.items()})

    def set(self, settings: Any) -> None:
        """Set every enabled control to ``settings`` without starting a run per control."""
        self._quiet = True
        try:
            for name, control in self.controls.items():
                if not getattr(control, "disabled", False):
                    control.value = getattr(settings, name)
        finally:
            self._quiet = False

    def show(self, result: Any, status: str = "shown: the run of section 2") -> None:
        """Put a run's picture, report and code line on screen."""
        buffer = io.BytesIO()
        self._picture(result).savefig(buffer, format="png")
        self.image.value = buffer.getvalue()
        self.summary.value = "<pre>" + self._report(result) + "</pre>"
        self.code.value = f"copy these settings: <code>{self._call(result)}</code>"
        self.status.value = status

    def schedule(self, change: object = None) -> None:
        """Start (or restart) the timer that redraws once the controls have been still."""
        if self._quiet:
            return
        if self.timer is not None:
            self.timer.cancel()
        self.status.value = "waiting for the controls to be still..."
        self.timer = self._timer(self.debounce_s, self.redraw)
        self.timer.daemon = True
        self.timer.start()

    def redraw(self) -> None:
        """Run the current settings and show the result; a failure goes to the status line."""
        with self.lock:
            me = threading.current_thread()
            if isinstance(me, threading.Timer) and me is not self.timer:  # a newer change waits: it redraws
                return
            start, settings = time.perf_counter(), self.current()
            note = self._notice(settings) if self._notice else ""
            self.progress.value, self.progress.bar_style = 0.0, "info"
            self.status.value = "running the loader..." + (f" {note}" if note else "")
            try:
                self.show(self._run(settings, self._on_progress), status="")
                self.redraw_s.append(time.perf_counter() - start)
                self.status.value = f"redrawn in {self.redraw_s[-1]:.1f} s"
                self.progress.bar_style = "success"
            except Exception as error:  # a run that fails says why, and the playground stays usable
                self.status.value = f"the run failed: {type(error).__name__}: {error}"
                self.progress.bar_style = "danger"

    def close(self) -> None:
        """Cancel a pending redraw and wait for one that is running."""
        if self.timer is not None:
            self.timer.cancel()
        with self.lock:
            pass

    def _on_progress(self, done: float) -> None:
        if done - self.progress.value >= 0.05 or done == 1.0:  # steps of 5 %: a message to the browser each
            self.progress.value = done

    def _on_preset(self, change: dict) -> None:
        if change["new"] in self.presets:
            self.set(self.presets[change["new"]])
            self.schedule()

    def _on_control(self, change: dict) -> None:
        if not self._quiet:
            self.preset.value = CUSTOM  # a moved knob leaves the preset
            self.schedule()
