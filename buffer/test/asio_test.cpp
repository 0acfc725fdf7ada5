// streambuf with Asio's read operations over a scripted stream (no sockets).
#include <inlet/buffer/streambuf.hpp>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

#include <gtest/gtest.h>

#include <string>

namespace inlet::buffer {
namespace {

namespace asio = boost::asio;

// Returns the scripted bytes at most `chunk` at a time, then EOF; records how
// many buffers each read was offered.
class script_stream {
 public:
  using executor_type = asio::io_context::executor_type;
  script_stream(asio::io_context& io, std::string data, std::size_t chunk)
      : io_(io), data_(std::move(data)), chunk_(chunk) {}
  executor_type get_executor() { return io_.get_executor(); }

  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& bufs, boost::system::error_code& ec) {
    ec = {};
    if (asio::buffer_size(bufs) == 0) return 0;
    if (pos_ == data_.size()) {
      ec = asio::error::eof;
      return 0;
    }
    max_pieces_ = std::max<std::size_t>(max_pieces_, static_cast<std::size_t>(
                                                         std::distance(asio::buffer_sequence_begin(bufs),
                                                                       asio::buffer_sequence_end(bufs))));
    std::size_t n = std::min(chunk_, data_.size() - pos_);
    n = asio::buffer_copy(bufs, asio::buffer(data_.data() + pos_, n));
    pos_ += n;
    return n;
  }
  template <class MutableBufferSequence>
  std::size_t read_some(const MutableBufferSequence& bufs) {
    boost::system::error_code ec;
    std::size_t n = read_some(bufs, ec);
    if (ec) throw boost::system::system_error(ec);
    return n;
  }
  template <class MutableBufferSequence, class Handler>
  void async_read_some(const MutableBufferSequence& bufs, Handler&& h) {
    boost::system::error_code ec;
    std::size_t n = read_some(bufs, ec);
    asio::post(io_, [h = std::forward<Handler>(h), ec, n]() mutable { h(ec, n); });
  }
  std::size_t max_pieces() const { return max_pieces_; }

 private:
  asio::io_context& io_;
  std::string data_;
  std::size_t chunk_;
  std::size_t pos_ = 0;
  std::size_t max_pieces_ = 0;
};

std::string session_bytes() {
  std::string body;
  for (int i = 0; i < 200; ++i) body += "line " + std::to_string(i) + " of the body, padded to length\r\n";
  return "EHLO client\r\n" + body + ".\r\nQUIT\r\n";
}

TEST(Asio, ReadUntilFindsDelimiterAcrossFragmentsForEveryChunkSize) {
  const std::string data = session_bytes();
  const std::size_t end = data.find("\r\n.\r\n") + 5;
  for (std::size_t chunk : {1u, 2u, 3u, 7u, 100u, 4095u, 4096u, 4097u, 100000u}) {
    asio::io_context io;
    script_stream s(io, data, chunk);
    streambuf sb(pool::get(4096));
    std::size_t n = asio::read_until(s, dynamic_buffer(sb), "EHLO client\r\n");
    ASSERT_EQ(n, 13u);
    sb.consume(n);
    n = asio::read_until(s, dynamic_buffer(sb), "\r\n.\r\n");
    ASSERT_EQ(n, end - 13);
    segment msg = sb.detach(n);
    ASSERT_EQ(msg.to_string(), data.substr(13, end - 13)) << chunk;
    boost::system::error_code ec;
    asio::read(s, dynamic_buffer(sb), ec);
    ASSERT_EQ(ec, asio::error::eof);
    ASSERT_EQ(std::string(sb.begin(), sb.end()), "QUIT\r\n");
  }
}

TEST(Asio, AsyncReadTransfersExactly) {
  const std::string data = session_bytes();
  asio::io_context io;
  script_stream s(io, data, 100000);
  streambuf sb(pool::get(4096));
  std::size_t got = 0;
  boost::system::error_code got_ec;
  asio::async_read(s, dynamic_buffer(sb), asio::transfer_exactly(data.size()),
                   [&](boost::system::error_code ec, std::size_t n) {
                     got_ec = ec;
                     got = n;
                   });
  io.run();
  EXPECT_FALSE(got_ec);
  EXPECT_EQ(got, data.size());
  EXPECT_EQ(std::string(sb.begin(), sb.end()), data);
  // Asio's v2 algorithm grows by the spare capacity only: one piece per call.
  EXPECT_EQ(s.max_pieces(), 1u);
}

TEST(Asio, AsyncReadSomeIntoPrepare) {
  const std::string data = session_bytes();
  asio::io_context io;
  script_stream s(io, data, 1000);
  streambuf sb(pool::get(4096));
  std::function<void()> step;
  std::size_t reads = 0;
  step = [&] {
    s.async_read_some(sb.prepare(1500), [&](boost::system::error_code ec, std::size_t n) {
      sb.commit(n);
      ++reads;
      if (!ec) step();
    });
  };
  step();
  io.run();
  EXPECT_EQ(std::string(sb.begin(), sb.end()), data);
  EXPECT_EQ(reads, (data.size() + 999) / 1000 + 1);  // + the EOF read
  // prepare(1500) across a fragment end offers both pieces to one read.
  EXPECT_EQ(s.max_pieces(), 2u);
}

TEST(Asio, AsyncReadUntilThenDetach) {
  const std::string data = session_bytes();
  const std::size_t end = data.find("\r\n.\r\n") + 5;
  for (std::size_t chunk : {1u, 5u, 1460u, 5000u}) {
    asio::io_context io;
    script_stream s(io, data, chunk);
    streambuf sb(pool::get(4096));
    segment msg;
    asio::async_read_until(s, dynamic_buffer(sb), "\r\n.\r\n",
                           [&](boost::system::error_code ec, std::size_t n) {
                             ASSERT_FALSE(ec);
                             msg = sb.detach(n);
                           });
    io.run();
    ASSERT_EQ(msg.to_string(), data.substr(0, end)) << chunk;
    ASSERT_TRUE(std::string(sb.begin(), sb.end()) == data.substr(end, sb.size()));
  }
}

TEST(Asio, WriteFromDataSequence) {
  streambuf sb(pool::get(4096));
  std::string text(10000, 'w');
  asio::buffer_copy(sb.prepare(text.size()), asio::buffer(text));
  sb.commit(text.size());
  std::string out(text.size(), '\0');
  EXPECT_EQ(asio::buffer_copy(asio::buffer(out), sb.data()), text.size());
  EXPECT_EQ(out, text);
}

}  // namespace
}  // namespace inlet::buffer
