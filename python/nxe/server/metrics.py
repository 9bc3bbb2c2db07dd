"""Prometheus metrics of one app, in its own CollectorRegistry (two apps in one process do not
share counters). HTTP requests are counted and timed by the gate as they finish; the engine's
own figures (queue depth, residency, loads, evictions) are read from the engine at each scrape,
so they are never stale and cost nothing between scrapes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

# Latency buckets from 0.5 ms (a small tensor model) to a minute (request_timeout_s default).
_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
                    5.0, 10.0, 30.0, 60.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
_STATES = ("unloaded", "loading", "resident", "failed")


class _EngineCollector(Collector):
    def __init__(self, engine: Any) -> None:
        self._engine = engine

    def collect(self) -> Iterator[Any]:
        stats = self._engine.stats()
        models = self._engine.models()
        yield GaugeMetricFamily("nxe_queue_depth", "Requests submitted and not finished",
                                value=stats.queue_depth)
        yield GaugeMetricFamily("nxe_queue_capacity", "Requests the queue holds before it "
                                "refuses more", value=stats.queue_capacity)
        yield GaugeMetricFamily("nxe_resident_models", "Models loaded now",
                                value=stats.resident_models)
        yield GaugeMetricFamily("nxe_resident_bytes", "Bytes the loaded models hold together",
                                value=stats.resident_bytes)
        for name, help_text in (("submitted", "Requests submitted to the engine"),
                                ("completed", "Requests that succeeded"),
                                ("failed", "Requests that failed, cancelled or timed out"),
                                ("rejected", "Submissions refused because the queue was full"),
                                ("batches", "Batches run"),
                                ("batched_requests", "Requests over all batches"),
                                ("loads", "Model loads"),
                                ("evictions", "Models unloaded to make room"),
                                ("idle_unloads", "Models unloaded after their idle time")):
            yield CounterMetricFamily(f"nxe_engine_{name}", help_text, value=getattr(stats, name))
        resident = GaugeMetricFamily("nxe_model_resident_bytes", "Bytes a model holds (0 unless "
                                     "resident)", labels=["model"])
        state = GaugeMetricFamily("nxe_model_state", "1 for the state a model is in",
                                  labels=["model", "state"])
        queued = GaugeMetricFamily("nxe_model_queued", "Requests waiting or running for a model",
                                   labels=["model"])
        loads = CounterMetricFamily("nxe_model_loads", "Loads of a model", labels=["model"])
        evictions = CounterMetricFamily("nxe_model_evictions", "Unloads of a model to make room",
                                        labels=["model"])
        requests = CounterMetricFamily("nxe_model_requests", "Requests a model finished",
                                       labels=["model"])
        for info in models:
            resident.add_metric([info.name], info.resident_bytes)
            for each in _STATES:
                state.add_metric([info.name, each], 1.0 if info.state == each else 0.0)
            queued.add_metric([info.name], info.queued)
            loads.add_metric([info.name], info.loads)
            evictions.add_metric([info.name], info.evictions)
            requests.add_metric([info.name], info.requests)
        yield from (resident, state, queued, loads, evictions, requests)


class Metrics:
    """The app's metrics. `observe` is called once per HTTP request, `observe_run` once per
    engine request that ran."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, engine: Any) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("nxe_http_requests", "HTTP requests answered",
                                ["route", "model", "status"], registry=self.registry)
        self.latency = Histogram("nxe_http_request_duration_seconds", "Time to answer an HTTP "
                                 "request", ["route", "model"], buckets=_LATENCY_BUCKETS,
                                 registry=self.registry)
        self.batch_size = Histogram("nxe_batch_size", "Size of the batch each request ran in",
                                    ["model"], buckets=_BATCH_BUCKETS, registry=self.registry)
        self.queued = Histogram("nxe_request_queue_seconds", "Time requests waited in the "
                                "engine's queue", ["model"], buckets=_LATENCY_BUCKETS,
                                registry=self.registry)
        self.run_time = Histogram("nxe_request_run_seconds", "Time requests ran on the engine's "
                                  "worker (model load included)", ["model"],
                                  buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.registry.register(_EngineCollector(engine))

    def observe(self, route: str, model: str, status: int, seconds: float) -> None:
        self.requests.labels(route, model, str(status)).inc()
        self.latency.labels(route, model).observe(seconds)

    def observe_run(self, model: str, timing: Any) -> None:
        if timing.batch_size > 0:
            self.batch_size.labels(model).observe(timing.batch_size)
            self.queued.labels(model).observe(timing.queued_s)
            self.run_time.labels(model).observe(timing.run_s)

    def render(self) -> bytes:
        return generate_latest(self.registry)
