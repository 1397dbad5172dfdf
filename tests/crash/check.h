// Looking at a reopened store: every job of the model (get()) and the store's counts, checked
// against the model; and the last step of a run, the drain.
#pragma once

#include <string>
#include <vector>

#include "delayq/engine.h"
#include "model.h"
#include "prefix.h"

namespace delayq::crash {

// What `q` shows of every job of the model, and its counts. Also checks what never changes: a
// present job's body (byte for byte), topic, ttr and max_attempts. `open_began`: the wall clock
// just before the open of `q` began (Observation::open_began).
Observation observe(Queue& q, const Model& m, int64_t open_began);
// The same, as records for a worker to send (`seen` for each job, then `observed`).
std::vector<Record> observation_records(const Observation& o);

// Checks after a kill, and in every mode after a power loss that lost nothing allowed to be
// kept (check_observation(), model.h): each job as the reports allow it to be (state, due time,
// attempts, lease deadline; a call in flight at the kill done or not; one more attempt for at
// most one job per reserve() in flight), the store holding no other job, and the totals of
// stats() matching the jobs (pushed - acked - cancelled - purged == jobs held). Then the model
// takes what the store shows as its picture.
// Also: no id the model forgot (gone for good) is back. Driver only (it gets every id).
void sweep_forgotten(Queue& q, Model& m);

// Schedules (schedules.cc): the load's schedules and the occurrence jobs on kScheduleTopic in
// one consistent look (false when none could be had), and the same as records for a worker to
// send (before its `observed`).
bool observe_schedules(Queue& q, Observation& o);
std::vector<Record> schedule_records(const Observation& o);
uint64_t jobs_on(const Stats& s, const std::string& topic);  // the jobs stats() counts on it

// Schedules after a power loss (power_schedules.cc, which says what a reopened store may show).
// schedules_after_power_loss(): from the schedules as the last check left them (`before`) and
// the cycle's records (Model::cycle_records), what the prefix search needs (the schedules there
// before and after, and which acks of occurrences taken in the cycle the store shows kept), and
// per schedule the occurrences whose job an ack took; records a problem for each schedule whose
// count of occurrences fired no kept acks explain. take_schedules(): in the modes that may lose
// answered calls, once the prefix search explained the store, the model takes its schedules.
struct PowerSchedules {
  PrefixSchedules prefix;
  std::map<uint64_t, std::set<int64_t>> acked;
};
std::map<uint64_t, SchedState> schedules_there(const std::map<uint64_t, ScheduleModel>& s);
PowerSchedules schedules_after_power_loss(Model& m,
                                          const std::map<uint64_t, ScheduleModel>& before,
                                          const Observation& o);
void take_schedules(Model& m, const Observation& o, const PowerSchedules& p);

// Static promises about a delivery (body, topic, max_attempts); empty when kept.
std::vector<std::string> delivery_static_problems(const Delivery& d, const Model& m);
// Browsing (browse.cc): what is wrong with `page`, a page of list_jobs() of kTopics[topic]'s
// jobs in `state` (ready or dead) asked in `w`, after `prev` (the last job of the page before,
// or null): each listed job of that topic and state, with the priority it was pushed with,
// allowed in that state at some instant of `w` by the model (which no other thread changes on
// the topics of the thread that lists), and in the state's order: dead jobs in the order they
// died, ready ones by priority, then by due time (after a reopen too: a lease that ran out while
// the store was closed is retried in its place in due order). Each problem with its job.
std::vector<std::pair<uint64_t, std::string>> page_problems(const JobPage& page, size_t topic,
                                                            JobState state, const Model& m,
                                                            Span w, const JobInfo* prev);
// A delivery as a `reserved` record of `thread` (t0, t1: the clock around the call).
Record delivery_record(const Delivery& d, uint64_t job, uint8_t thread, int64_t t0, int64_t t1);

// The last step: reserve and ack until every job still owed (live and not dead) has been
// delivered (or is dead after its last attempt). `owed`, `delivered`: how many.
void drain(Model& m, Queue& q, size_t* owed, uint64_t* delivered);

}  // namespace delayq::crash
