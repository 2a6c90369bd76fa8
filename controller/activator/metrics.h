// The activator's Prometheus metrics (served on its admin port's /metrics).
#pragma once

#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace pilotlight::activator {

struct Metrics {
  explicit Metrics(prometheus::Registry& r)
      : requests(prometheus::BuildCounter()
                     .Name("pilotlight_activator_requests_total")
                     .Help("Requests answered, by endpoint and HTTP code")
                     .Register(r)),
        held(prometheus::BuildGauge()
                 .Name("pilotlight_activator_held_requests")
                 .Help("Requests waiting for a replica now, by endpoint")
                 .Register(r)),
        in_flight(prometheus::BuildGauge()
                      .Name("pilotlight_activator_in_flight_requests")
                      .Help("Requests forwarded and not yet answered, by "
                            "endpoint")
                      .Register(r)),
        hold(prometheus::BuildHistogram()
                 .Name("pilotlight_activator_hold_seconds")
                 .Help("How long requests that had to wait were held before "
                       "a replica took them, by endpoint")
                 .Register(r)),
        cold_starts(prometheus::BuildCounter()
                        .Name("pilotlight_activator_cold_starts_total")
                        .Help("Requests that waited for a pod that was not "
                              "ready when they arrived, by endpoint")
                        .Register(r)),
        wakes(prometheus::BuildCounter()
                  .Name("pilotlight_activator_wakes_total")
                  .Help("Wakes of pods' engines asleep (POST /wake_up, one "
                        "for all the requests that met it asleep), by "
                        "endpoint and result (woken, failed, gave_way: "
                        "given up for another target of the endpoint's, its "
                        "own pod or another pool pod)")
                  .Register(r)),
        room_sleeps(prometheus::BuildCounter()
                        .Name("pilotlight_activator_room_sleeps_total")
                        .Help("Idle engines put to sleep (POST /sleep) to "
                              "make room on a pool pod's GPU for a wake, by "
                              "the endpoint whose wake needed it")
                        .Register(r)),
        rejections(prometheus::BuildCounter()
                       .Name("pilotlight_activator_rejections_total")
                       .Help("Requests refused, by reason (queue_full, "
                             "activation_timeout, wake_failed, "
                             "unknown_endpoint, too_large, shutting_down)")
                       .Register(r)),
        upstream_errors(prometheus::BuildCounter()
                            .Name("pilotlight_activator_upstream_errors_total")
                            .Help("Failures talking to model-server pods, by "
                                  "reason (connect, broken, "
                                  "response_timeout, client_gone)")
                            .Register(r)),
        upstream_connections(
            prometheus::BuildCounter()
                .Name("pilotlight_activator_upstream_connections_total")
                .Help("Requests sent to a pod, by the connection they went "
                      "on (new; reused: kept alive from an earlier "
                      "request; stale: a reused one the pod had closed, "
                      "so a new one)")
                .Register(r)),
        // Resolved once, each at zero from the start: one of them counts
        // every request sent.
        connections_new(upstream_connections.Add({{"how", "new"}})),
        connections_reused(upstream_connections.Add({{"how", "reused"}})),
        connections_stale(upstream_connections.Add({{"how", "stale"}})),
        abandoned(prometheus::BuildCounter()
                      .Name("pilotlight_activator_abandoned_total")
                      .Help("Requests whose client hung up before a pod "
                            "answered, by stage (held: waiting for a pod; "
                            "sent: a pod had it and had not answered)")
                      .Register(r)),
        retries(prometheus::BuildCounter()
                    .Name("pilotlight_activator_retries_total")
                    .Help("Requests sent to another pod after one refused "
                          "the connection (before any byte was answered)")
                    .Register(r)
                    .Add({})),
        client_retries(prometheus::BuildCounter()
                           .Name("pilotlight_activator_client_retries_total")
                           .Help("Requests their client marked as a retry "
                                 "(X-Stainless-Retry-Count > 0, the OpenAI "
                                 "and Anthropic SDKs): served, not counted "
                                 "again as demand, by endpoint")
                           .Register(r)),
        pokes(prometheus::BuildCounter()
                  .Name("pilotlight_activator_pokes_total")
                  .Help("Requests that found an endpoint with no ready "
                        "replica and told the controllers at once")
                  .Register(r)
                  .Add({})),
        poke_ack(prometheus::BuildHistogram()
                     .Name("pilotlight_activator_poke_ack_seconds")
                     .Help("Poke -> the controller's acknowledgement")
                     .Register(r)
                     .Add({},
                          prometheus::Histogram::BucketBoundaries{
                              0.0005, 0.001, 0.002, 0.005, 0.01, 0.05, 0.1, 0.5,
                              1})),
        controllers(prometheus::BuildGauge()
                        .Name("pilotlight_activator_controllers_connected")
                        .Help("Controller replicas this activator streams "
                              "demand to")
                        .Register(r)
                        .Add({})),
        targets(prometheus::BuildGauge()
                    .Name("pilotlight_activator_targets")
                    .Help("Pods requests are forwarded to (Ready and "
                          "answering), by endpoint")
                    .Register(r)) {
    // Every reason at zero from the start: a rate() over them works (and a
    // dashboard finds the series) before the first one happens.
    for (const char* reason :
         {"queue_full", "activation_timeout", "unknown_endpoint", "too_large",
          "shutting_down"}) {
      rejections.Add({{"reason", reason}});
    }
    for (const char* reason :
         {"connect", "broken", "response_timeout", "client_gone"}) {
      upstream_errors.Add({{"reason", reason}});
    }
    for (const char* stage : {"held", "sent"}) {
      abandoned.Add({{"stage", stage}});
    }
  }

  prometheus::Family<prometheus::Counter>& requests;
  prometheus::Family<prometheus::Gauge>& held;
  prometheus::Family<prometheus::Gauge>& in_flight;
  prometheus::Family<prometheus::Histogram>& hold;
  prometheus::Family<prometheus::Counter>& cold_starts;
  prometheus::Family<prometheus::Counter>& wakes;
  prometheus::Family<prometheus::Counter>& room_sleeps;

  // An endpoint's hold histogram (its buckets in one place).
  prometheus::Histogram& HoldOf(const std::string& endpoint) {
    return hold.Add(
        {{"endpoint", endpoint}},
        prometheus::Histogram::BucketBoundaries{
            0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600});
  }
  // Every per-endpoint series, at zero until it counts something (a
  // dashboard's query then finds the endpoint before its first cold start).
  void Touch(const std::string& endpoint) {
    HoldOf(endpoint);
    cold_starts.Add({{"endpoint", endpoint}});
    client_retries.Add({{"endpoint", endpoint}});
    requests.Add({{"endpoint", endpoint}, {"code", "200"}});
    wakes.Add({{"endpoint", endpoint}, {"result", "woken"}});
    room_sleeps.Add({{"endpoint", endpoint}});
  }
  prometheus::Family<prometheus::Counter>& rejections;
  prometheus::Family<prometheus::Counter>& upstream_errors;
  prometheus::Family<prometheus::Counter>& upstream_connections;
  prometheus::Counter& connections_new;
  prometheus::Counter& connections_reused;
  prometheus::Counter& connections_stale;
  prometheus::Family<prometheus::Counter>& abandoned;
  prometheus::Counter& retries;
  prometheus::Family<prometheus::Counter>& client_retries;
  prometheus::Counter& pokes;
  prometheus::Histogram& poke_ack;
  prometheus::Gauge& controllers;
  prometheus::Family<prometheus::Gauge>& targets;
};

}  // namespace pilotlight::activator
