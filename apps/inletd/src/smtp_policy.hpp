// Mailpit's SMTP recipient and STARTTLS rules, from options into the session.
#pragma once

#include "options.hpp"

#include <inlet/smtp/server_session.hpp>

#include <string>

namespace inletd {

/// Sets require_starttls, recipient_allowed and ignore_rejected_recipients of
/// `s`. Returns an error message for options that cannot work (a bad regular
/// expression, STARTTLS required without a certificate); empty when fine.
std::string apply_smtp_policy(const options& o, inlet::smtp::session_config& s);

}  // namespace inletd
