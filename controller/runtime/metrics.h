// The controller's Prometheus metrics (served on /metrics), in one place.
#pragma once

#include <string>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace pilotlight::runtime {

struct Metrics {
  explicit Metrics(prometheus::Registry& r)
      : desired(prometheus::BuildGauge()
                    .Name("pilotlight_desired_replicas")
                    .Help("Replicas Pilotlight decided, per variant "
                          "(gpu_class, capacity_type)")
                    .Register(r)),
        ready(prometheus::BuildGauge()
                  .Name("pilotlight_ready_replicas")
                  .Help("Ready replicas, per variant (gpu_class, "
                        "capacity_type)")
                  .Register(r)),
        demand(prometheus::BuildGauge()
                   .Name("pilotlight_demand_concurrency")
                   .Help("Demand in the stable window, requests in flight "
                         "and queued, per endpoint")
                   .Register(r)),
        capacity(prometheus::BuildGauge()
                     .Name("pilotlight_capacity_concurrency")
                     .Help("Requests the ready replicas serve at once within "
                           "the latency SLO, per endpoint")
                     .Register(r)),
        decode_calibration(
            prometheus::BuildGauge()
                .Name("pilotlight_decode_calibration_ratio")
                .Help("Observed / predicted decode step time of the tier "
                      "serving, learned from the engines' latency "
                      "histograms (1: uncalibrated), per endpoint")
                .Register(r)),
        warm_pool(prometheus::BuildGauge()
                      .Name("pilotlight_warm_pool_replicas")
                      .Help("Replicas decided beyond the load's, per endpoint")
                      .Register(r)),
        keep_alive(prometheus::BuildGauge()
                       .Name("pilotlight_keep_alive_seconds")
                       .Help("Idle time before the last replica goes, per "
                             "endpoint")
                       .Register(r)),
        always_on_cost(prometheus::BuildGauge()
                           .Name("pilotlight_always_on_cost_per_hour_dollars")
                           .Help("The counterfactual: the load's replicas, at "
                                 "least one, on demand, never scaled to zero")
                           .Register(r)),
        spot_fallback(prometheus::BuildGauge()
                          .Name("pilotlight_spot_fallback")
                          .Help("1 while on-demand replicas stand in for "
                                "missing spot ones, per endpoint")
                          .Register(r)),
        slo_cold_fraction(
            prometheus::BuildGauge()
                .Name("pilotlight_slo_max_cold_start_fraction")
                .Help("The endpoint's SLO: the largest share of requests "
                      "that may wait for a cold start")
                .Register(r)),
        cost(prometheus::BuildGauge()
                 .Name("pilotlight_cost_per_hour_dollars")
                 .Help("GPU cost per hour of the decided replicas")
                 .Register(r)),
        decisions(prometheus::BuildCounter()
                      .Name("pilotlight_decisions_total")
                      .Help("Decisions, by endpoint and reason")
                      .Register(r)),
        cold_start(prometheus::BuildHistogram()
                       .Name("pilotlight_cold_start_seconds")
                       .Help("Pod created -> Ready, as learned per variant")
                       .Register(r)),
        reconcile(prometheus::BuildHistogram()
                      .Name("pilotlight_reconcile_duration_seconds")
                      .Help("One endpoint's reconcile")
                      .Register(r)
                      .Add({},
                           prometheus::Histogram::BucketBoundaries{
                               1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1, 10})),
        tick_cpu(prometheus::BuildGauge()
                     .Name("pilotlight_tick_cpu_seconds")
                     .Help("CPU time (user+system) of the last tick's "
                           "reconciles of every endpoint")
                     .Register(r)
                     .Add({})),
        tick_endpoints(prometheus::BuildGauge()
                           .Name("pilotlight_tick_endpoints")
                           .Help("Endpoints reconciled in the last tick")
                           .Register(r)
                           .Add({})),
        api_errors(prometheus::BuildCounter()
                       .Name("pilotlight_api_errors_total")
                       .Help("Failed Kubernetes API writes")
                       .Register(r)
                       .Add({})),
        api_requests(prometheus::BuildGauge()
                         .Name("pilotlight_api_requests")
                         .Help("Kubernetes API requests sent (informers, "
                               "workers, leader election), since start")
                         .Register(r)
                         .Add({})),
        prom_errors(prometheus::BuildCounter()
                        .Name("pilotlight_prometheus_errors_total")
                        .Help("Prometheus queries that failed")
                        .Register(r)
                        .Add({})),
        prom_queries(prometheus::BuildCounter()
                         .Name("pilotlight_prometheus_queries_total")
                         .Help("Prometheus queries sent")
                         .Register(r)
                         .Add({})),
        prom_queries_per_tick(
            prometheus::BuildGauge()
                .Name("pilotlight_prometheus_queries_per_tick")
                .Help("Prometheus queries in the last tick")
                .Register(r)
                .Add({})),
        leader(prometheus::BuildGauge()
                   .Name("pilotlight_leader")
                   .Help("1 while this controller leads")
                   .Register(r)
                   .Add({})),
        activators(prometheus::BuildGauge()
                       .Name("pilotlight_activators_connected")
                       .Help("Activators streaming demand to this controller")
                       .Register(r)
                       .Add({})),
        activator_reports(prometheus::BuildCounter()
                              .Name("pilotlight_activator_reports_total")
                              .Help("Demand reports received from activators")
                              .Register(r)
                              .Add({})),
        poke_to_patch(
            prometheus::BuildHistogram()
                .Name("pilotlight_poke_to_patch_seconds")
                .Help("An activator's poke received -> the endpoint's /scale "
                      "patch accepted by the API server")
                .Register(r)
                .Add({},
                     prometheus::Histogram::BucketBoundaries{
                         0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1})),
        pokes(prometheus::BuildCounter()
                  .Name("pilotlight_pokes_total")
                  .Help("Endpoints reconciled at once because an activator "
                        "holds requests for them with no ready replica")
                  .Register(r)
                  .Add({})),
        counterfactual_replays(
            prometheus::BuildCounter()
                .Name("pilotlight_counterfactual_replays_total")
                .Help("Endpoints' recorded traffic replayed through the "
                      "candidate policies (status.counterfactual)")
                .Register(r)
                .Add({})),
        counterfactual_cpu(
            prometheus::BuildCounter()
                .Name("pilotlight_counterfactual_cpu_seconds_total")
                .Help("CPU those replays took (their thread keeps to "
                      "--counterfactual-cpu of a core)")
                .Register(r)
                .Add({})),
        counterfactual_running_cost(
            prometheus::BuildGauge()
                .Name("pilotlight_counterfactual_running_cost_per_hour_"
                      "dollars")
                .Help("The running policy's cost per hour in the latest "
                      "replay of the endpoint's own recorded traffic "
                      "(status.counterfactual), per endpoint; NaN before "
                      "the record supports one")
                .Register(r)),
        counterfactual_cheapest_cost(
            prometheus::BuildGauge()
                .Name("pilotlight_counterfactual_cheapest_cost_per_hour_"
                      "dollars")
                .Help("In that replay, the cheapest candidate at the "
                      "running policy's SLO attainment and cold-start "
                      "share or better (the running one's cost when none "
                      "is cheaper)")
                .Register(r)),
        pool_engine_sleeps(
            prometheus::BuildCounter()
                .Name("pilotlight_pool_engine_sleeps_total")
                .Help("Engines in endpoints' sleep pools the controller put "
                      "to sleep (POST /sleep?level=1), by result (ok, "
                      "failed)")
                .Register(r)),
        serving_state(
            prometheus::BuildGauge()
                .Name("pilotlight_serving_state")
                .Help("1 for what serves the endpoint's next request, 0 for "
                      "the others, by state: replicas (its own Ready "
                      "replicas), engine_awake (none; an engine of its "
                      "sleep pool awake), engine_asleep (a wake away), zero "
                      "(a cold start away)")
                .Register(r)),
        sleep_pool_engines(
            prometheus::BuildGauge()
                .Name("pilotlight_sleep_pool_engines")
                .Help("The endpoint's engines on its sleep pool's Ready pods, "
                      "by pool (the pool Deployment; empty without one) and "
                      "state (awake, asleep)")
                .Register(r)),
        sleep_pool_pods(
            prometheus::BuildGauge()
                .Name("pilotlight_sleep_pool_pods")
                .Help("The endpoint's sleep pool's Ready pods, by pool and "
                      "state: busy (an engine awake on it, any endpoint's: "
                      "its GPU taken) or free")
                .Register(r)),
        sleep_pool_sized(
            prometheus::BuildGauge()
                .Name("pilotlight_sleep_pool_sized_pods")
                .Help("The pods Pilotlight sizes the endpoint's sleep pool "
                      "to, by pool (its busy pods and a spare, kept a pod's "
                      "start; NaN where the pool Deployment does not opt in "
                      "with pilotlight.dev/max-pool-pods)")
                .Register(r)) {
    // At zero from the start: a dashboard's rate() finds them before the
    // first sleep.
    for (const char* result : {"ok", "failed"}) {
      pool_engine_sleeps.Add({{"result", result}});
    }
  }

  prometheus::Family<prometheus::Gauge>& desired;
  prometheus::Family<prometheus::Gauge>& ready;
  prometheus::Family<prometheus::Gauge>& demand;
  prometheus::Family<prometheus::Gauge>& capacity;
  prometheus::Family<prometheus::Gauge>& decode_calibration;
  prometheus::Family<prometheus::Gauge>& warm_pool;
  prometheus::Family<prometheus::Gauge>& keep_alive;
  prometheus::Family<prometheus::Gauge>& always_on_cost;
  prometheus::Family<prometheus::Gauge>& spot_fallback;
  prometheus::Family<prometheus::Gauge>& slo_cold_fraction;
  prometheus::Family<prometheus::Gauge>& cost;
  prometheus::Family<prometheus::Counter>& decisions;
  prometheus::Family<prometheus::Histogram>& cold_start;

  // A GPU class's cold-start histogram (its buckets in one place). Made
  // when an endpoint on the class is first seen, so the first cold start
  // counts from zero in rate().
  prometheus::Histogram& ColdStartOf(const std::string& gpu_class) {
    return cold_start.Add({{"gpu_class", gpu_class}},
                          prometheus::Histogram::BucketBoundaries{
                              1, 2, 5, 10, 20, 30, 60, 90, 120, 180, 300, 600});
  }
  prometheus::Histogram& reconcile;
  prometheus::Gauge& tick_cpu;
  prometheus::Gauge& tick_endpoints;
  prometheus::Counter& api_errors;
  prometheus::Gauge& api_requests;
  prometheus::Counter& prom_errors;
  prometheus::Counter& prom_queries;
  prometheus::Gauge& prom_queries_per_tick;
  prometheus::Gauge& leader;
  prometheus::Gauge& activators;
  prometheus::Counter& activator_reports;
  prometheus::Histogram& poke_to_patch;
  prometheus::Counter& pokes;
  prometheus::Counter& counterfactual_replays;
  prometheus::Counter& counterfactual_cpu;
  prometheus::Family<prometheus::Gauge>& counterfactual_running_cost;
  prometheus::Family<prometheus::Gauge>& counterfactual_cheapest_cost;
  prometheus::Family<prometheus::Counter>& pool_engine_sleeps;
  prometheus::Family<prometheus::Gauge>& serving_state;
  prometheus::Family<prometheus::Gauge>& sleep_pool_engines;
  prometheus::Family<prometheus::Gauge>& sleep_pool_pods;
  prometheus::Family<prometheus::Gauge>& sleep_pool_sized;
};

}  // namespace pilotlight::runtime
