// Mailpit's `sans:NAME,...` certificates: a throwaway self-signed certificate and key for
// the names given, made at start (ECDSA P-256, valid a year), written to a private
// directory (mode 0700, files 0600) and removed when inletd exits. The same names (in any
// order) give the same pair, so `--tls-cert sans:x --tls-key sans:x` is one certificate
// and its key.
#pragma once

#include <string>

namespace inletd {

/// True for a `sans:` value.
bool is_sans(const std::string& value);

/// Replaces a `sans:` certificate and key setting by the paths of a generated pair (each
/// that is `sans:`; a file path stays). An error message, or empty.
std::string resolve_sans(std::string& cert, std::string& key);

}  // namespace inletd
