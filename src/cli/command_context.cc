// What the delayq CLI's commands share (see command_context.h).
#include "cli/command_context.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <ostream>

#include "cli/commands.h"
#include "cli/human_text.h"
#include "cli/target.h"
#include "wire/flow.h"
#include "wire/spec.h"

namespace delayq::cli {

namespace json = delayq::wire::json;

std::optional<UsageError> read_body(Context& c, std::string& body) {
  const auto& f = c.inv.flags;
  if (f.contains("body") && f.contains("body-file"))
    return UsageError{"give --body or --body-file, not both", &c.command};
  if (f.contains("body")) body = f.at("body");
  if (!f.contains("body-file")) return std::nullopt;
  const std::string& path = f.at("body-file");
  if (path == "-") {
    body.assign(std::istreambuf_iterator<char>(c.in), {});
    return std::nullopt;
  }
  std::ifstream file(path, std::ios::binary);
  if (!file)
    return UsageError{"cannot read --body-file " + path + ": " + std::strerror(errno), &c.command};
  body.assign(std::istreambuf_iterator<char>(file), {});
  return std::nullopt;
}

int follow_pages(Context& c, std::string& cursor, bool all, size_t& listed,
                 const std::function<Result<ShownPage>(const std::string&, size_t)>& page) {
  const auto end_json = [&](const Status* failure) {
    json::Writer w;
    w.begin_object();
    wire::write_cursor(w, cursor);
    if (failure != nullptr)
      w.key("error")
          .value(to_string(static_cast<Errc>(failure->code().value())))
          .key("message")
          .value(failure->message());
    c.out << "]," << w.end_object().str().substr(1) << "\n";  // after the opening brace
  };
  for (;;) {
    auto shown = page(cursor, listed);
    if (!shown) {
      const Status s = with_cli_hint(shown.status());
      if (!c.inv.json) return failed(c, s);
      end_json(&s);
      c.err << "delayq: " << c.what << ": " << s.to_string() << "\n";
      return kExitFailed;
    }
    listed += shown->items;
    // No progress: a target that answers the same cursor ends here.
    if (shown->cursor == cursor && !cursor.empty()) shown->cursor.clear();
    cursor = shown->cursor;
    if (!all || cursor.empty()) break;
  }
  if (c.inv.json) end_json(nullptr);
  return kExitOk;
}

int64_t unix_ms(TimePoint t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}
int64_t ms(Duration d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}

void write_job(json::Writer& w, const JobInfo& j) {
  w.begin_object().key("id").value(j.id).key("topic").value(j.topic);
  w.key("state").value(to_string(j.state)).key("attempts").value(j.attempts);
  w.key("max_attempts").value(j.max_attempts).key("priority").value(j.priority);
  w.key("due").value(format_utc_time(j.due)).key("due_ms").value(unix_ms(j.due));
  w.key("ttr_ms").value(ms(j.ttr));
  // As delayqd's /get shows it; not at all when the target did not say (max_attempts 0).
  if (j.retry.max_attempts > 0) wire::write_retry(w.key("retry"), j.retry);
  if (j.state == JobState::reserved) {
    w.key("lease_deadline").value(format_utc_time(j.lease_deadline));
    w.key("lease_deadline_ms").value(unix_ms(j.lease_deadline));
  }
  if (j.state == JobState::dead) {
    w.key("dead_since").value(format_utc_time(j.dead_since));
    w.key("dead_since_ms").value(unix_ms(j.dead_since));
  }
  w.key("body").value(j.body).end_object();
}

std::string when(TimePoint t, TimePoint now) {
  return format_local_time(t) + " (" + format_relative(t, now) + ")";
}

void json_error(const Streams& io, std::string_view error, const std::string& message) {
  if (!io.json) return;
  json::Writer w;
  w.begin_object().key("error").value(error).key("message").value(message).end_object();
  io.out << w.str() << "\n";
}

int failed(Context& c, const Status& status) {
  const Status s = with_cli_hint(status);
  c.err << "delayq: " << c.what << ": " << s.to_string() << "\n";
  json_error({c.out, c.err, c.inv.json}, to_string(static_cast<Errc>(s.code().value())),
             s.message());
  return kExitFailed;
}

int usage(const Streams& io, const UsageError& u) {
  const std::string message =
      (u.command != nullptr ? std::string(u.command->name) + ": " : "") + u.message;
  io.err << "delayq: " << message << "\n";
  if (u.command != nullptr)
    io.err << command_usage(*u.command);
  else
    io.err << "usage: delayq TARGET COMMAND [ARGS] [--json] (delayq help lists the commands)\n";
  json_error(io, "usage", message);
  return kExitUsage;
}

}  // namespace delayq::cli
