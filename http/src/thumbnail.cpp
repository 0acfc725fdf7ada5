// Image thumbnails with GraphicsMagick's C API (Debian libgraphicsmagick1-dev).
//
// Hostile images are bounded twice before and while decoding: the image's own header is
// read here (JPEG SOF, PNG IHDR, GIF screen, BMP, WebP) to refuse dimensions past the
// limits without decoding a pixel, and GraphicsMagick's resource limits (width, height,
// pixels per image, heap and memory-mapped pixel cache, no disk cache, one thread) stop a
// decoder that finds more than the header said (animated GIF frames, lying headers). Only
// those five formats are handed to the library, recognised by their magic bytes, so no
// other coder (and no external delegate) is ever reached.
//
// The library is opened (dlopen) at the first thumbnail, not linked: its image coders pull
// in some sixty shared libraries (X11, ICU, HEIF, JPEG XL) whose loading and initialisers
// were most of inletd's start-up, paid by every `inletd sendmail` run and every start for
// a feature most runs never use. Its declarations still type every call.
#include <dlfcn.h>
#include <wand/magick_wand.h>

#include <cstdio>
#include <cstring>
#include <optional>

#include "outbound.hpp"

namespace inlet::http::detail {
namespace {

constexpr unsigned long thumb_w = 180, thumb_h = 120;

struct dims {
  std::uint64_t w = 0, h = 0;
};

std::uint32_t be16(const unsigned char* p) {
  return (p[0] << 8) | p[1];
}
std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t(p[0]) << 24) | (p[1] << 16) | (p[2] << 8) | p[3];
}
std::uint32_t le16(const unsigned char* p) {
  return p[0] | (p[1] << 8);
}
std::uint32_t le24(const unsigned char* p) {
  return p[0] | (p[1] << 8) | (p[2] << 16);
}
std::uint32_t le32(const unsigned char* p) {
  return le16(p) | (std::uint32_t(le16(p + 2)) << 16);
}

// The dimensions an image's header declares, for the formats we decode; nullopt for
// anything else (which gets the blank thumbnail).
std::optional<dims> header_dims(std::string_view img) {
  const auto* p = reinterpret_cast<const unsigned char*>(img.data());
  const std::size_t n = img.size();
  if (n >= 24 && std::memcmp(p, "\x89PNG\r\n\x1a\n", 8) == 0 && std::memcmp(p + 12, "IHDR", 4) == 0)
    return dims{be32(p + 16), be32(p + 20)};
  if (n >= 10 && (std::memcmp(p, "GIF87a", 6) == 0 || std::memcmp(p, "GIF89a", 6) == 0))
    return dims{le16(p + 6), le16(p + 8)};
  if (n >= 26 && p[0] == 'B' && p[1] == 'M') {
    std::int32_t h = static_cast<std::int32_t>(le32(p + 22));
    return dims{le32(p + 18),
                static_cast<std::uint64_t>(h < 0 ? -static_cast<std::int64_t>(h) : h)};
  }
  if (n >= 30 && std::memcmp(p, "RIFF", 4) == 0 && std::memcmp(p + 8, "WEBP", 4) == 0) {
    if (std::memcmp(p + 12, "VP8 ", 4) == 0)
      return dims{le16(p + 26) & 0x3fff, le16(p + 28) & 0x3fff};
    if (std::memcmp(p + 12, "VP8L", 4) == 0 && n >= 25) {
      std::uint32_t b = le32(p + 21);
      return dims{(b & 0x3fff) + 1, ((b >> 14) & 0x3fff) + 1};
    }
    if (std::memcmp(p + 12, "VP8X", 4) == 0) return dims{le24(p + 24) + 1, le24(p + 27) + 1};
    return std::nullopt;
  }
  if (n >= 4 && p[0] == 0xFF && p[1] == 0xD8 && p[2] == 0xFF) {
    // Walk the segments to the first start-of-frame marker.
    std::size_t i = 2;
    while (i + 9 < n) {
      if (p[i] != 0xFF) return std::nullopt;
      const unsigned m = p[i + 1];
      if (m == 0xD8 || (m >= 0xD0 && m <= 0xD7) || m == 0x01 || m == 0xFF) {
        i += m == 0xFF ? 1 : 2;
        continue;
      }
      const std::uint32_t len = be16(p + i + 2);
      if ((m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC)
        return dims{be16(p + i + 7), be16(p + i + 5)};
      if (len < 2) return std::nullopt;
      i += 2 + len;
    }
  }
  return std::nullopt;
}

// Every GraphicsMagick function used here, each a pointer of its declared type.
#define INLET_MAGICK_FUNCTIONS(X)                                                      \
  X(InitializeMagick) X(SetMagickResourceLimit) X(NewMagickWand) X(DestroyMagickWand)  \
  X(MagickSetImageFormat) X(MagickSetCompressionQuality) X(MagickStripImage)           \
  X(MagickWriteImageBlob) X(MagickRelinquishMemory) X(MagickSetSize) X(MagickReadImage) \
  X(MagickReadImageBlob) X(MagickSetImageIndex) X(MagickGetImageWidth)                 \
  X(MagickGetImageHeight) X(MagickResizeImage) X(MagickCropImage) X(MagickCompositeImage)

struct magick_api {
#define INLET_MAGICK_POINTER(name) decltype(&::name) name = nullptr;
  INLET_MAGICK_FUNCTIONS(INLET_MAGICK_POINTER)
#undef INLET_MAGICK_POINTER
};

// The library, opened and set up once (never closed: its coders keep global state);
// null when it cannot be loaded (said once on stderr).
const magick_api* magick() {
  static const magick_api* api = []() -> const magick_api* {
    void* lib = ::dlopen(INLET_GRAPHICSMAGICK_WAND_SONAME, RTLD_NOW | RTLD_LOCAL);
    static magick_api a;
    bool ok = lib != nullptr;
#define INLET_MAGICK_LOAD(name)                                                 \
  if (ok) {                                                                     \
    a.name = reinterpret_cast<decltype(&::name)>(::dlsym(lib, #name));          \
    ok = a.name != nullptr;                                                     \
  }
    INLET_MAGICK_FUNCTIONS(INLET_MAGICK_LOAD)
#undef INLET_MAGICK_LOAD
    if (!ok) {
      const char* why = ::dlerror();
      std::fprintf(stderr, "inletd: thumbnails unavailable: %s: %s\n",
                   INLET_GRAPHICSMAGICK_WAND_SONAME, why ? why : "a function is missing");
      return nullptr;
    }
    a.InitializeMagick(nullptr);
    a.SetMagickResourceLimit(ThreadsResource, 1);
    // Bytes (the header's comments say megabytes; the library counts bytes), for every
    // thumbnail being made at once.
    a.SetMagickResourceLimit(MemoryResource, magick_int64_t{512} << 20);
    a.SetMagickResourceLimit(MapResource, magick_int64_t{512} << 20);
    a.SetMagickResourceLimit(DiskResource, 0);  // never a pixel cache on disk
    return &a;
  }();
  return api;
}

struct wand_ptr {
  explicit wand_ptr(const magick_api& api) : m(api), w(api.NewMagickWand()) {}
  ~wand_ptr() { m.DestroyMagickWand(w); }
  const magick_api& m;
  MagickWand* w;
  wand_ptr(const wand_ptr&) = delete;
  wand_ptr& operator=(const wand_ptr&) = delete;
};

std::string encode_jpeg(const magick_api& m, MagickWand* w) {
  if (!m.MagickSetImageFormat(w, "JPEG") || !m.MagickSetCompressionQuality(w, 80)) return {};
  m.MagickStripImage(w);
  std::size_t len = 0;
  unsigned char* blob = m.MagickWriteImageBlob(w, &len);
  if (!blob) return {};
  std::string out(reinterpret_cast<char*>(blob), len);
  m.MagickRelinquishMemory(blob);
  return out;
}

// A white canvas of the thumbnail's size.
bool white_canvas(const magick_api& m, MagickWand* w) {
  return m.MagickSetSize(w, thumb_w, thumb_h) && m.MagickReadImage(w, "xc:white");
}

}  // namespace

std::string blank_thumbnail() {
  const magick_api* m = magick();
  if (!m) return {};
  static const std::string blank = [m] {
    wand_ptr c(*m);
    return white_canvas(*m, c.w) ? encode_jpeg(*m, c.w) : std::string{};
  }();
  return blank;
}

std::string make_thumbnail(std::string_view image, const thumbnail_config& limits) {
  const magick_api* api = magick();
  if (!api) return {};
  const magick_api& m = *api;
  auto d = header_dims(image);
  if (!d || d->w == 0 || d->h == 0 || d->w > limits.max_side || d->h > limits.max_side ||
      d->w * d->h > limits.max_pixels || image.size() > limits.max_input_bytes)
    return blank_thumbnail();
  // Per-image limits (set for every call: they are process-wide and the config may differ).
  m.SetMagickResourceLimit(WidthResource, limits.max_side);
  m.SetMagickResourceLimit(HeightResource, limits.max_side);
  m.SetMagickResourceLimit(PixelsResource, static_cast<magick_int64_t>(limits.max_pixels));
  wand_ptr img(m);
  if (!m.MagickReadImageBlob(img.w, reinterpret_cast<const unsigned char*>(image.data()),
                             image.size()))
    return blank_thumbnail();
  if (!m.MagickSetImageIndex(img.w, 0)) return blank_thumbnail();  // the first frame
  const unsigned long w = m.MagickGetImageWidth(img.w), h = m.MagickGetImageHeight(img.w);
  if (w == 0 || h == 0) return blank_thumbnail();
  long x = 0, y = 0;
  if (w < thumb_w && h < thumb_h) {
    x = static_cast<long>((thumb_w - w) / 2);  // small: centred on white
    y = static_cast<long>((thumb_h - h) / 2);
  } else {
    // Scale to cover the thumbnail, then keep the middle.
    const double s = std::max(double(thumb_w) / w, double(thumb_h) / h);
    const unsigned long sw =
        std::max<unsigned long>(thumb_w, static_cast<unsigned long>(w * s + 0.5));
    const unsigned long sh =
        std::max<unsigned long>(thumb_h, static_cast<unsigned long>(h * s + 0.5));
    if (!m.MagickResizeImage(img.w, sw, sh, LanczosFilter, 1.0)) return blank_thumbnail();
    if (!m.MagickCropImage(img.w, thumb_w, thumb_h, static_cast<long>((sw - thumb_w) / 2),
                           static_cast<long>((sh - thumb_h) / 2)))
      return blank_thumbnail();
  }
  wand_ptr canvas(m);  // transparency becomes white, JPEG has none
  if (!white_canvas(m, canvas.w) ||
      !m.MagickCompositeImage(canvas.w, img.w, OverCompositeOp, x, y))
    return blank_thumbnail();
  std::string jpeg = encode_jpeg(m, canvas.w);
  return jpeg.empty() ? blank_thumbnail() : jpeg;
}

}  // namespace inlet::http::detail
