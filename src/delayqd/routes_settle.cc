// /finish (/ack), /nack, /touch, /dead_letter: the end of a delivery, by its token, or by the
// job's id for the latest delivery this daemon handed out (tokens.h), as ouqiang/delay-queue's
// /finish names only the job (see routes.h, docs/http-api.md).
#include <optional>
#include <string>
#include <vector>

#include "delayqd/responses.h"
#include "delayqd/routes.h"
#include "wire/jobs.h"

namespace delayq::http::routes {

namespace {

using wire::Fields;
using wire::json::Value;
using wire::json::Writer;

// The members that name the delivery.
struct Names {
  std::optional<std::string> token;
  std::optional<std::string> id;
};
Names read_names(Fields& f) {
  return {f.string("token"), f.name("id", false)};
}

// The delivery a request names: its token, whether it was found by id, and for /nack when to
// retry.
struct Named {
  Token token;
  bool by_id = false;
  std::optional<Duration> delay;
};

// Without a token: the latest delivery of `id` that this daemon handed out. Without one, finish
// removes a reserved job (the daemon was restarted since its pop) and succeeds for a job that is
// gone, as ouqiang's finish does; the other routes say why they cannot act. The token, or nothing
// when `done` has been called.
std::optional<Token> token_by_id(RouteContext& ctx, Route route, const std::string& id,
                                 Done& done) {
  if (auto token = ctx.tokens.latest(id)) return token;
  auto info = ctx.queue.get(id);
  const bool finishing = route == Route::finish;
  if (info.is(Errc::not_found) && finishing) {
    done(ok("no such job: already finished or deleted"));
  } else if (!info) {
    done(fail(info.status()));
  } else if (info->state != JobState::reserved) {
    const std::string what = route == Route::dead_letter ? "dead-letter" : route_name(route);
    done(fail(409, to_string(Errc::invalid_state),
              "job '" + id + "' is " + to_string(info->state) + ", not reserved: nothing to " +
                  what + (finishing ? " (use /delete to remove it)" : "")));
  } else if (finishing) {
    // Reserved, by a delivery this daemon does not remember: finishing means the job is done.
    Status s = ctx.queue.cancel(id);
    done(!s.ok() && !s.is(Errc::not_found) ? fail(s) : ok("finished"));
  } else {
    done(fail(409, to_string(Errc::stale_token),
              "no delivery of job '" + id +
                  "' handed out by this daemon is known (was it restarted since the pop?); pass "
                  "the \"token\" from /pop"));
  }
  return std::nullopt;
}

// The delivery `names` names, or nothing when `done` has been called (a member refused, a bad
// token, a token of another job, or no delivery of the id to use).
std::optional<Named> resolve(RouteContext& ctx, Route route, const Fields& f, const Names& names,
                             Done& done) {
  const auto refuse = [&](const std::string& why) {
    done(bad_request(why));
    return std::optional<Named>();
  };
  const bool has_id = names.id && !names.id->empty();
  if (!f.ok()) return refuse(f.error());
  if (!names.token && !has_id) return refuse("missing field \"id\" (or \"token\")");
  if (!names.token) {
    auto token = token_by_id(ctx, route, *names.id, done);
    if (!token) return std::nullopt;
    return Named{std::move(*token), true};
  }
  auto t = Token::parse(*names.token);
  if (!t) return refuse(t.status().message());
  if (has_id && *names.id != t->id)
    return refuse("the token belongs to job '" + t->id + "', not to '" + *names.id + "'");
  return Named{std::move(*t), false};
}

// The answer once the queue settled the delivery with `s` (`done_message` on success).
void settled(RouteContext& ctx, const Named& n, Status s, bool finishing, const char* done_message,
             Done& done) {
  if (s.ok() || s.is(Errc::not_found)) ctx.tokens.forget(n.token.id);
  if (s.is(Errc::not_found) && n.by_id && finishing)
    return done(ok("no such job: already finished or deleted"));
  if (!s.ok()) return done(fail(s));
  done(ok(done_message));
}

// Reads a settling request (`route`'s members: "token" or "id", and for /nack "delay" or
// "delay_ms") and finds the delivery it names; nothing when `done` has been called.
std::optional<Named> named(RouteContext& ctx, Route route, const Value& body, Done& done) {
  Fields f(body, ctx.limits);
  const bool nacking = route == Route::nack;
  if (nacking)
    f.only({"token", "id", "delay", "delay_ms"}, "/nack");
  else if (route == Route::finish)
    f.only({"token", "id", "tokens"}, "/finish");  // "tokens": finish_batch
  else
    f.only({"token", "id"}, std::string("/") + route_name(route));
  const Names names = read_names(f);
  std::optional<Duration> delay;
  if (nacking) delay = f.duration("delay", "delay_ms", "use 0 to retry at once");
  auto n = resolve(ctx, route, f, names, done);
  if (n) n->delay = delay;
  return n;
}

// /finish with "tokens": several deliveries at once (Queue::ack_batch). The request is refused
// whole when its shape is wrong (not an array of strings, empty, over max_batch, beside "token"
// or "id"); otherwise each token is finished or refused on its own, a token that does not parse
// as invalid_argument, and the answer lists the outcomes in order, as /push_batch does.
void finish_batch(RouteContext& ctx, const Value& body, Done& done) {
  if (body.find("token") != nullptr || body.find("id") != nullptr)
    return done(bad_request("give \"tokens\", or one \"token\" or \"id\", not both"));
  Fields f(body, ctx.limits);
  f.only({"tokens"}, "/finish with \"tokens\"");
  const Value* list = f.ok() ? f.get("tokens") : nullptr;
  if (!f.ok()) return done(bad_request(f.error()));
  if (list == nullptr || !list->is_array())
    return done(bad_request("field \"tokens\" must be an array of tokens from /pop"));
  const auto& items = list->as_array();
  if (items.empty()) return done(bad_request("\"tokens\" is empty: give at least one token"));
  if (items.size() > ctx.options.max_batch)
    return done(fail(413, wire::Refusal::too_large,
                     "at most " + std::to_string(ctx.options.max_batch) +
                         " tokens in one request; this one has " + std::to_string(items.size())));
  std::vector<Status> outcome(items.size());
  std::vector<Token> tokens;
  std::vector<size_t> index;  // tokens[k] is items[index[k]]
  for (size_t i = 0; i < items.size(); ++i) {
    if (!items[i].is_string())
      return done(bad_request("tokens[" + std::to_string(i) + "] must be a string, not a " +
                              to_string(items[i].type())));
    auto t = Token::parse(items[i].as_string());
    if (!t) {
      outcome[i] = t.status();
      continue;
    }
    tokens.push_back(std::move(*t));
    index.push_back(i);
  }
  const std::vector<Status> acked = ctx.queue.ack_batch(tokens);
  for (size_t k = 0; k < tokens.size(); ++k) {
    outcome[index[k]] = k < acked.size() ? acked[k] : Status(Errc::io_error, "no result");
    if (outcome[index[k]].ok() || outcome[index[k]].is(Errc::not_found))
      ctx.tokens.forget(tokens[k].id);
  }
  Writer w;
  size_t finished = 0;
  w.begin_object().key("results").begin_array();
  for (const Status& st : outcome) {
    w.begin_object().key("code").value(st.ok() ? 0 : 1);
    if (st.ok())
      ++finished;
    else
      w.key("error").value(errc_name(st)).key("message").value(st.message());
    w.end_object();
  }
  w.end_array().key("finished").value(static_cast<uint64_t>(finished));
  w.key("refused").value(static_cast<uint64_t>(items.size() - finished)).end_object();
  const std::string message =
      std::to_string(finished) + " of " + std::to_string(items.size()) + " finished";
  done(Response{200, "application/json",
                wire::answer_json(finished == items.size() ? 0 : 1, message, w.str())});
}

}  // namespace

void finish(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  if (body.find("tokens") != nullptr) return finish_batch(ctx, body, done);
  if (auto n = named(ctx, Route::finish, body, done))
    settled(ctx, *n, ctx.queue.ack(n->token), true, "finished", done);
}

void nack(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  if (auto n = named(ctx, Route::nack, body, done))
    settled(ctx, *n, ctx.queue.nack(n->token, n->delay), false, "nacked", done);
}

void dead_letter(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  if (auto n = named(ctx, Route::dead_letter, body, done))
    settled(ctx, *n, ctx.queue.dead_letter(n->token), false, "dead-lettered", done);
}

// A longer lease for the delivery: its new deadline.
void touch(RouteContext& ctx, const Request&, const Value& body, Done& done) {
  auto n = named(ctx, Route::touch, body, done);
  if (!n) return;
  auto deadline = ctx.queue.touch(n->token);
  if (!deadline) return done(fail(deadline.status()));
  wire::json::Writer w;
  w.begin_object();
  wire::write_time(w, "lease_deadline", *deadline);
  w.end_object();
  done(ok("touched", w.str()));
}

}  // namespace delayq::http::routes
