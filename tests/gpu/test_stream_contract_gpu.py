"""The caller-stream contract on a real GPU, through a real prefixed CUDA blob.

A runtime runs a model on the shims' current stream: the caller's selection (made
through the prefixed ``aoti_shim_caller_stream_*`` ABI), else the shims' own current
stream (a stream guard's, else the default stream). The proof that a run's work is
queued on a stream S: S is held behind a spin kernel on another stream; the run returns
at once; while S is still held, the model's input buffer is overwritten from an
independent stream; after the hold ends, the outputs are the model of the NEW input.
Had the kernels run anywhere but behind the hold, they would have read the old input.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from gpu_support import (
    LEGACY_STREAM,
    Hold,
    coalesced_host,
    compile_cache,
    destroy_stream,
    needs_gpu,
    new_stream,
    prefixed_model,
    read_outputs,
    run_on_current_stream,
    stream_idle,
    stream_sync,
)

pytestmark = needs_gpu()

import torch  # noqa: E402 - after the module's GPU skip

from aoti_shim.smoke.compare import compare  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.loader import load_private_copy  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.models import bundled  # noqa: E402 - after the module's GPU skip
from aoti_shim.smoke.runner import Container  # noqa: E402 - after the module's GPU skip


class Model:
    """A loaded prefixed MLP with two inputs whose eager outputs clearly differ."""

    def __init__(self, factory: pytest.TempPathFactory) -> None:
        self.host = coalesced_host()
        built = prefixed_model("mlp", compile_cache(factory), factory.mktemp("gpu-stream"))
        self.built = built
        io = torch.load(built.io_file)
        self.x0 = io["inputs"][0].cuda().contiguous()
        generator = torch.Generator().manual_seed(7)
        self.x1 = (torch.randn(self.x0.shape, generator=generator) * 2.0).cuda().contiguous()
        module, _ = bundled(("mlp",))[0].build("cuda")
        with torch.no_grad():
            self.y0 = module(self.x0).cpu()
            self.y1 = module(self.x1).cpu()
        torch.cuda.synchronize()
        assert not compare([self.y0], [self.y1]).within_tolerance, "the two inputs must give different outputs"

    def container(self, loaded: Any) -> Container:
        return Container(loaded.library, "cuda", self.built.kernel_dir)


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Model:
    return Model(tmp_path_factory)


@pytest.fixture
def loaded(model: Model):
    with load_private_copy(model.built.blob) as blob:
        container = model.container(blob)
        # One run first, unheld: lazy kernel loading and first-run work stay out of the proofs.
        with torch.no_grad():
            _, outs = run_on_current_stream(model.host, container, [model.x0])
        torch.cuda.synchronize()
        read_outputs(model.host, outs)
        try:
            yield container
        finally:
            torch.cuda.synchronize()
            container.close()


def _held_run(model: Model, container: Container, held: int, expect_stream: int) -> None:
    """Hold ``held``, run on the shims' current stream (which must be ``expect_stream``),
    swap the input while held, release, and require the new input's outputs."""
    buffer = model.x0.clone()
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    hold = Hold(held)
    try:
        stream, outs = run_on_current_stream(model.host, container, [buffer])
        assert stream == expect_stream, f"the run went to stream {stream:#x}, expected {expect_stream:#x}"
        assert not hold.released(), "the spin ended before the run returned: the proof needs a longer hold"
        with torch.cuda.stream(side):
            buffer.copy_(model.x1)  # independent of the held stream
        side.synchronize()
        assert not hold.released(), "the spin ended before the input was swapped: the proof needs a longer hold"
        assert not stream_idle(held), "the held stream reports no pending work"
        hold.wait()
        stream_sync(held)
    finally:
        hold.close()
    got = read_outputs(model.host, outs)
    swapped, original = compare(got, [model.y1]), compare(got, [model.y0])
    assert swapped.within_tolerance, (
        f"outputs are not those of the swapped input ({swapped.detail}): the run did not wait on the held stream"
    )
    assert not original.within_tolerance


def test_selected_stream_carries_the_model_run(model: Model, loaded: Container) -> None:
    stream = new_stream()
    try:
        with model.host.streams.caller_stream(stream):
            assert model.host.streams.get() == (True, stream)
            assert model.host.streams.current(0) == stream
            _held_run(model, loaded, held=stream, expect_stream=stream)
        assert model.host.streams.get() == (False, 0)
    finally:
        destroy_stream(stream)


def test_selected_stream_does_not_touch_the_default_stream(model: Model, loaded: Container) -> None:
    """While the selected stream is held, the legacy default stream stays idle: the run's
    work (kernels, allocations, copies) went nowhere else."""
    stream = new_stream()
    try:
        torch.cuda.synchronize()
        hold = Hold(stream)
        try:
            with model.host.streams.caller_stream(stream):
                _, outs = run_on_current_stream(model.host, loaded, [model.x0])
            assert not hold.released()
            assert stream_idle(LEGACY_STREAM), "work was queued on the legacy default stream"
            assert not stream_idle(stream)
        finally:
            hold.close()
        stream_sync(stream)
        assert compare(read_outputs(model.host, outs), [model.y0]).within_tolerance
    finally:
        destroy_stream(stream)


def test_without_a_selection_the_shims_own_current_stream_is_used(model: Model, loaded: Container) -> None:
    streams = model.host.streams
    assert streams.get() == (False, 0)
    assert streams.current(0) == 0, "no selection and no guard: the default stream"
    own = new_stream()
    try:
        # The shims' own current stream: a stream guard's (as the blob sets around its work).
        with streams.stream_guard(own):
            assert streams.get() == (False, 0)
            assert streams.current(0) == own
            _held_run(model, loaded, held=own, expect_stream=own)
        assert streams.current(0) == 0
        # A guard wins over a caller selection while it lives; the selection comes back after.
        selected = new_stream()
        try:
            with streams.caller_stream(selected):
                with streams.stream_guard(own):
                    assert streams.current(0) == own
                assert streams.current(0) == selected
        finally:
            destroy_stream(selected)
    finally:
        destroy_stream(own)


def test_explicit_null_selects_the_legacy_default_stream(model: Model, loaded: Container) -> None:
    streams = model.host.streams
    other = new_stream()
    try:
        with streams.caller_stream(other):
            # An explicit null inside another selection: selected, and it is the null stream.
            with streams.caller_stream(None):
                assert streams.get() == (True, 0)
                assert streams.current(0) == 0
                _held_run(model, loaded, held=LEGACY_STREAM, expect_stream=0)
            assert streams.get() == (True, other)
        assert streams.get() == (False, 0)
    finally:
        destroy_stream(other)


def test_two_threads_with_different_selections_get_their_own_streams(model: Model) -> None:
    """Each thread selects its own stream; both run at once. Thread A's stream is held;
    thread B's run completes while A's is still held, and A's waits for the hold."""
    host = model.host
    stream_a, stream_b = new_stream(), new_stream()
    barrier = threading.Barrier(2, timeout=60)
    seen: dict[str, Any] = {}
    errors: list[BaseException] = []
    buffer_a = model.x0.clone()
    torch.cuda.synchronize()
    with load_private_copy(model.built.blob) as blob_a, load_private_copy(model.built.blob) as blob_b:
        assert blob_a.library._handle != blob_b.library._handle, "the two copies are one library"
        containers = {"a": model.container(blob_a), "b": model.container(blob_b)}
        for c in containers.values():  # warm both, unheld
            _, outs = run_on_current_stream(host, c, [model.x0])
            torch.cuda.synchronize()
            read_outputs(host, outs)
        hold = Hold(stream_a, seconds=3.0)

        def worker(name: str, stream: int, x: torch.Tensor) -> None:
            try:
                with host.streams.caller_stream(stream):
                    barrier.wait()  # both selections are live from here on
                    seen[name + ".selection"] = host.streams.get()
                    used, outs = run_on_current_stream(host, containers[name], [x])
                    seen[name + ".stream"], seen[name + ".outs"] = used, outs
                    barrier.wait()
                    seen[name + ".selection.after"] = host.streams.get()
            except BaseException as e:  # noqa: BLE001 - re-raised below
                errors.append(e)
                barrier.abort()

        threads = [
            threading.Thread(target=worker, args=("a", stream_a, buffer_a)),
            threading.Thread(target=worker, args=("b", stream_b, model.x1)),
        ]
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            assert not errors, errors
            assert seen["a.selection"] == seen["a.selection.after"] == (True, stream_a)
            assert seen["b.selection"] == seen["b.selection.after"] == (True, stream_b)
            assert seen["a.stream"] == stream_a and seen["b.stream"] == stream_b
            assert host.streams.get() == (False, 0), "the main thread's selection changed"
            # B ran on its own stream: it finishes while A's stream is still held.
            stream_sync(stream_b)
            assert not hold.released(), "the hold ended before B finished: the proof needs a longer hold"
            assert not stream_idle(stream_a)
            # A's run waits for the hold: swap its input now, and it must see the new one.
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                buffer_a.copy_(model.x1)
            side.synchronize()
            assert not hold.released()
        finally:
            hold.close()
            torch.cuda.synchronize()
        got_b = read_outputs(host, seen["b.outs"])
        got_a = read_outputs(host, seen["a.outs"])
        assert compare(got_b, [model.y1]).within_tolerance
        assert compare(got_a, [model.y1]).within_tolerance, "thread A's run did not wait on its held stream"
        for c in containers.values():
            c.close()
    destroy_stream(stream_a)
    destroy_stream(stream_b)


def test_prefixed_blob_imports_only_prefixed_shims(model: Model) -> None:
    """The CUDA blob under test is the prefixed one: nothing it imports can bind to libtorch."""
    from aoti_shim.checks.elf.image import ElfImage

    with ElfImage(Path(model.built.blob)) as image:
        shim_imports = [n for n in image.imports() if "aoti_torch_" in n]
    assert shim_imports and all(n.startswith("aotishim_aoti_torch_") for n in shim_imports), shim_imports
