// A JSON schema's string constraints as a regex over the string's raw text (not its JSON quoting),
// for the grammars of formats that write string values bare (the XML tool-call form): the
// schema's "pattern" (ECMA-262 semantics: found anywhere unless anchored; \d and \w ASCII, as
// llguidance reads patterns) and its "format" (date, time, date-time, uuid, ipv4, email,
// hostname). The result is in llguidance's regex syntax, ready to sit between the slashes of a
// Lark regex (its '/' escaped).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace nbits::serve {

// The regexes the text must match, all of them (none: only lengths or nothing constrain it).
// Throws nbits::Error for a pattern this cannot carry over (an anchor inside it, a lookaround,
// a backreference): a schema the grammar would otherwise silently not enforce.
std::vector<std::string> schema_string_regexes(const nlohmann::ordered_json& schema);

}  // namespace nbits::serve
