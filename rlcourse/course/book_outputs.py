"""A lesson's outputs as nbval's run produced them, kept for the book (so no lesson runs twice).

nbval reads each cell's iopub messages to check them, then drops them. `CellOutputs` sees the same
messages and builds the cell's outputs as JupyterLab would show them (display updates and
clear_output applied, which nbval ignores); lessons/conftest.py writes the executed notebook, with
`run_record()` (the machine and date) in its metadata, to `_build/executed/` for `make book`.
"""

import datetime
import os
import platform
from importlib import metadata

import nbformat
import psutil
from nbformat.v4 import output_from_msg

OUTPUT_MESSAGES = {"stream", "display_data", "execute_result", "error"}
VERSIONS = ("ray", "torch", "numpy", "gymnasium")


class CellOutputs:
    """The outputs of one cell, from the iopub messages of its execute request."""

    def __init__(self) -> None:
        self.outputs: list[nbformat.NotebookNode] = []
        self._clear_on_next = False

    def add(self, msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "clear_output":
            self._clear_on_next = content.get("wait", False)
            if not self._clear_on_next:
                self.outputs.clear()
        elif kind == "update_display_data":
            display_id = content.get("transient", {}).get("display_id")
            for output in self.outputs:
                if output.get("metadata", {}).get("display_id") == display_id:
                    output["data"], output["metadata"] = content["data"], content["metadata"]
                    output["metadata"]["display_id"] = display_id
        elif kind in OUTPUT_MESSAGES:
            if self._clear_on_next:
                self.outputs.clear()
                self._clear_on_next = False
            output = output_from_msg(msg)
            display_id = content.get("transient", {}).get("display_id")
            if display_id:  # kept (and removed on save) so that later updates find the output
                output.setdefault("metadata", {})["display_id"] = display_id
            if output.output_type == "stream" and self.outputs and \
                    self.outputs[-1].get("name") == output.name:
                self.outputs[-1].text += output.text
            else:
                self.outputs.append(output)

    def finished(self) -> list[nbformat.NotebookNode]:
        """The outputs to save: streams with carriage returns resolved, display ids dropped."""
        for output in self.outputs:
            output.get("metadata", {}).pop("display_id", None)
            if output.output_type == "stream":
                output.text = "\n".join(line.rsplit("\r", 1)[-1] for line in output.text.split("\n"))
        return self.outputs


def run_record() -> dict:
    """Where and when the outputs were produced: date, CPUs, memory and library versions."""
    versions = {}
    for name in ("python", *VERSIONS):
        try:
            versions[name] = platform.python_version() if name == "python" else metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return {"date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "cpus": os.cpu_count(), "cpu_model": cpu_model(), "system": platform.system(),
            "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "load_average": [round(x, 1) for x in os.getloadavg()], "versions": versions}


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            return next(line.split(":", 1)[1].strip() for line in cpuinfo
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def describe_run(record: dict) -> str:
    """One paragraph for the top of a book page: the machine and date its outputs came from."""
    versions = ", ".join(f"{name} {version}" for name, version in record["versions"].items())
    return (f"The outputs on this page come from one run of the lesson on {record['date']}: "
            f"{record['cpus']} CPUs ({record['cpu_model']}), {record['memory_gib']} GiB of memory, "
            f"load average {record['load_average'][0]} at the end; {versions}. Every time and speed "
            f"on it is that machine's, on that day: your run will print its own.")
