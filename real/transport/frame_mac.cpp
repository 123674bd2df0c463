#include "real/transport/frame_mac.h"

#include <stdexcept>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

namespace replisim::real {

FrameMac::FrameMac(const FrameKey& key) {
  EVP_MAC* hmac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  if (hmac != nullptr) context_ = EVP_MAC_CTX_new(hmac);
  EVP_MAC_free(hmac);  // the context keeps its own reference
  char digest[] = "SHA256";
  const OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
                               OSSL_PARAM_END};
  if (context_ == nullptr || EVP_MAC_init(context_, key.data(), key.size(), params) != 1) {
    EVP_MAC_CTX_free(context_);
    throw std::runtime_error("OpenSSL cannot make an HMAC-SHA256 context for the frames");
  }
}

FrameMac::~FrameMac() {
  EVP_MAC_CTX_free(context_);
}

FrameMacBytes FrameMac::next(const uint8_t* header, const uint8_t* payload, size_t size) {
  uint8_t sequence[8];
  for (int i = 0; i < 8; ++i) sequence[i] = uint8_t(sequence_ >> (8 * i));
  ++sequence_;
  FrameMacBytes out{};
  size_t length = 0;
  // A null key re-initialises with the key given at construction (OpenSSL 3's HMAC).
  const bool ok = EVP_MAC_init(context_, nullptr, 0, nullptr) == 1 &&
                  EVP_MAC_update(context_, sequence, sizeof sequence) == 1 &&
                  EVP_MAC_update(context_, header, kFrameHeaderBytes) == 1 &&
                  (size == 0 || EVP_MAC_update(context_, payload, size) == 1) &&
                  EVP_MAC_final(context_, out.data(), &length, out.size()) == 1;
  if (!ok || length != out.size()) throw std::runtime_error("OpenSSL failed to MAC a frame");
  return out;
}

bool same_mac(const FrameMacBytes& a, const uint8_t* b) {
  return CRYPTO_memcmp(a.data(), b, a.size()) == 0;
}

}  // namespace replisim::real
