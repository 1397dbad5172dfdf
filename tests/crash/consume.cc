// consume() in the worker (load.h, kConsumeTopic): a loop of the library's own, whose handler
// reports what the loop did around it. The loop reserves a job, calls the handler, acks the job
// (ack_batch of one, the store taking one job at a time) and only then reserves the next; so
//  - a delivery is reported on the handler's entry, by a reserve that began when the previous
//    handler returned (or when the loop started);
//  - the ack is reported as begun when the handler returns, and as answered on the next entry:
//    done if the job is gone then (nothing else calls on it), refused as stale if not (its lease
//    ran out first).
// A kill between the two leaves both in flight, as the model settles any call.
#include <memory>
#include <optional>

#include "worker_process.h"

namespace delayq::crash {

namespace {

int64_t clock_ns() {
  return ns_of(wall_now());
}

struct ConsumeReports {
  WorkerProcess* w = nullptr;
  Record reserve;             // the reserve in flight (thread kConsumeReserves)
  std::optional<Record> ack;  // the ack of the last delivery (thread kConsumeAcks)
};

Record consume_intent(Kind kind, uint64_t job, size_t thread, int64_t t0) {
  Record r = make_record(kind, job);
  r.thread = static_cast<uint8_t>(thread);
  r.t0 = t0;
  return r;
}

}  // namespace

void WorkerProcess::start_consume() {
  auto st = std::make_shared<ConsumeReports>();
  st->w = this;
  st->reserve = consume_intent(Kind::reserve_intent, 0, kConsumeReserves, clock_ns());
  emit(st->reserve);
  auto handler = [st](const Delivery& d) {
    WorkerProcess& w = *st->w;
    const int64_t entered = clock_ns();
    if (st->ack) {
      const Result<JobInfo> got = w.q_->get(job_id(st->ack->job));
      const Status s = got.is(Errc::not_found)
                           ? Status()
                           : Status(Errc::stale_token, "consume(): the job is still there");
      w.emit(done_record(Kind::ack_done, *st->ack, s, entered));
    }
    w.report_delivery(d, kConsumeReserves, st->reserve.t0, entered);
    const uint64_t job = parse_job_id(d.id).value_or(0);
    const int64_t left = clock_ns();
    Record ack = consume_intent(Kind::ack_intent, job, kConsumeAcks, left);
    ack.n = d.token.fence;
    w.emit(ack);
    st->ack = ack;
    st->reserve = consume_intent(Kind::reserve_intent, 0, kConsumeReserves, left);
    w.emit(st->reserve);
    return HandlerResult::ack();
  };
  consumer_ = q_->consume(kTopics[kConsumeTopic], handler, 1);
}

}  // namespace delayq::crash
