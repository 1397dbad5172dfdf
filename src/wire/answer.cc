// The answers' shape and delayqd's refusal words (see answer.h).
#include "wire/answer.h"

namespace delayq::wire {

namespace {

struct RefusalWord {
  Refusal refusal;
  std::string_view word;
  Errc errc;  // what a client reports
};

constexpr RefusalWord kRefusals[] = {
    {Refusal::bad_json, "bad_json", Errc::invalid_argument},
    {Refusal::bad_request, "bad_request", Errc::invalid_argument},
    {Refusal::bad_http, "bad_http", Errc::unavailable},
    {Refusal::too_large, "too_large", Errc::invalid_argument},
    {Refusal::unauthorized, "unauthorized", Errc::unavailable},
    {Refusal::forbidden, "forbidden", Errc::invalid_argument},
    {Refusal::no_route, "no_route", Errc::unavailable},
    {Refusal::method_not_allowed, "method_not_allowed", Errc::unavailable},
    {Refusal::not_supported, "not_supported", Errc::invalid_argument},
    {Refusal::overloaded, "overloaded", Errc::unavailable},
    {Refusal::shutting_down, "shutting_down", Errc::unavailable},
    {Refusal::client_closed, "client_closed", Errc::unavailable},
    {Refusal::internal_error, "internal_error", Errc::unavailable},
};

}  // namespace

const char* to_string(Refusal r) noexcept {
  for (const RefusalWord& w : kRefusals)
    if (w.refusal == r) return w.word.data();
  return "internal_error";
}

Errc errc_of(std::string_view error) {
  for (const RefusalWord& w : kRefusals)
    if (w.word == error) return w.errc;
  const Result<Errc> e = parse_errc(error);
  return e.ok() && *e != Errc::ok ? *e : Errc::unavailable;
}

std::string answer_json(int code, std::string_view message, std::string_view data) {
  json::Writer w;
  w.begin_object().key("code").value(code).key("message").value(message);
  w.key("data").raw(data).end_object();
  return w.take() + "\n";
}

std::string refusal_json(std::string_view error, std::string_view message, std::string_view data) {
  json::Writer w;
  w.begin_object().key("code").value(1).key("message").value(message).key("error").value(error);
  w.key("data").raw(data).end_object();
  return w.take() + "\n";
}

std::optional<Answer> read_answer(std::string_view body) {
  auto doc = json::parse(body, json::kReplyLimits);
  if (!doc || !doc->is_object()) return std::nullopt;
  Answer a;
  if (const json::Value* code = doc->find("code"); code != nullptr && code->is_int())
    a.code = code->as_int();
  a.message = json::member_string(*doc, "message");
  a.error = json::member_string(*doc, "error");
  if (const json::Value* data = doc->find("data")) a.data = *data;
  return a;
}

}  // namespace delayq::wire
