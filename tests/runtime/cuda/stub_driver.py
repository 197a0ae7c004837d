"""A Driver whose GPU work is unimplemented: tests subclass it to fake a binding (its
device facts, opening, context switches) where no GPU is."""
from tfc.runtime.cuda.driver import Driver


class StubDriver(Driver):
    name = "fake"

    def _make_current(self): pass
    def device_name(self): return "fake"
    def compute_capability(self): return (8, 0)
    def total_memory(self): return 1 << 30
    def free_memory(self): return 1 << 30
    def load_module(self, ptx, name): raise NotImplementedError
    def launch(self, *a, **k): raise NotImplementedError
    def alloc(self, nbytes): raise NotImplementedError
    def free(self, ptr): raise NotImplementedError
    def memcpy_htod(self, *a, **k): raise NotImplementedError
    def memcpy_dtoh(self, *a, **k): raise NotImplementedError
    def memcpy_dtod(self, *a, **k): raise NotImplementedError
    def memset_d8(self, *a, **k): raise NotImplementedError
    def synchronize(self): pass
    def create_stream(self): raise NotImplementedError
    def create_event(self): raise NotImplementedError
    def _module_function(self, module, kernel_name): raise NotImplementedError
    def _stream_handle(self, native): return 0
    def _stream_synchronize(self, stream): pass
    def _event_record(self, event, stream): pass
    def _event_synchronize(self, event): pass
    def _event_elapsed_ms(self, start, end): return 0.0
