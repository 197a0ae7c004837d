"""gRPC transcripts: what TensorFlow's processes said to each other, recorded once
(tests/fixtures/make_tf_grpc_transcripts.py) and replayed by tests without TensorFlow.

A ``RecordingProxy`` listens on a port, forwards every unary call (any method, bytes
unchanged) to a target address and records request, response and status. ``FakeServer``
answers calls from recorded responses: by method, in the recorded order, or through a
``responder`` function.
"""
from __future__ import annotations

import base64
import json
import threading
from concurrent import futures

import grpc

OPTIONS = [("grpc.so_reuseport", 0), ("grpc.max_send_message_length", -1),
           ("grpc.max_receive_message_length", -1)]


def _identity(data: bytes) -> bytes:
    return data


def encode(data) -> str | None:
    return None if data is None else base64.b64encode(data).decode()


def decode(text) -> bytes | None:
    return None if text is None else base64.b64decode(text)


class _Generic(grpc.GenericRpcHandler):
    def __init__(self, behaviour):
        self._behaviour = behaviour

    def service(self, handler_call_details):
        method = handler_call_details.method

        def handle(request, context):
            return self._behaviour(method, request, context)

        return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=_identity,
                                                   response_serializer=_identity)


class _Server:
    def __init__(self, behaviour, port: int = 0):
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=16), options=OPTIONS)
        self._server.add_generic_rpc_handlers((_Generic(behaviour),))
        self.port = self._server.add_insecure_port(f"127.0.0.1:{port}")
        assert self.port, f"could not bind 127.0.0.1:{port}"
        self._server.start()

    def stop(self) -> None:
        self._server.stop(0).wait()


class RecordingProxy(_Server):
    """Forwards every call to ``target`` and records it."""

    def __init__(self, target: str, port: int = 0):
        self._channel = grpc.insecure_channel(target, options=OPTIONS)
        self._lock = threading.Lock()
        self.calls: list = []
        super().__init__(self._forward, port)

    def _forward(self, method, request, context):
        remaining = context.time_remaining()
        timeout = None if remaining is None or remaining > 1e8 else remaining
        with self._lock:
            record = {"method": method, "request": encode(request)}
            self.calls.append(record)
        stub = self._channel.unary_unary(method, request_serializer=_identity, response_deserializer=_identity)
        try:
            response = stub(request, timeout=timeout)
        except grpc.RpcError as e:
            record.update(code=e.code().value[0], details=e.details() or "", response=None)
            context.abort(e.code(), e.details() or "")
        record.update(code=0, details="", response=encode(response))
        return response

    def take(self) -> list:
        with self._lock:
            calls, self.calls = self.calls, []
        return calls

    def stop(self) -> None:
        super().stop()
        self._channel.close()


class FakeServer(_Server):
    """Answers calls from a transcript: the next recorded response of the called method
    (``calls``), or what ``responder(method, request bytes)`` returns (bytes, or (code,
    details) for an error)."""

    def __init__(self, calls=(), responder=None):
        self._queues: dict = {}
        for call in calls:
            self._queues.setdefault(call["method"], []).append(call)
        self._responder = responder
        self._lock = threading.Lock()
        self.received: list = []
        super().__init__(self._answer)

    def _answer(self, method, request, context):
        with self._lock:
            self.received.append((method, request))
            if self._responder is not None:
                answer = self._responder(method, request)
            else:
                queue = self._queues.get(method)
                if not queue:
                    context.abort(grpc.StatusCode.UNIMPLEMENTED, f"the transcript has no more {method} calls")
                call = queue.pop(0)
                answer = decode(call["response"]) if call["code"] == 0 else (call["code"], call["details"])
        if isinstance(answer, tuple):
            code = next(c for c in grpc.StatusCode if c.value[0] == answer[0])
            context.abort(code, answer[1])
        return answer


def load(path: str) -> dict:
    with open(path) as f:
        return json.load(f)
