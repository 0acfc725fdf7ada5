// The admission policy (inlet/net/admission.hpp) on plain values: subnets, hard
// limits, slot pressure with its hysteresis and shares, and which connection
// is evicted when every slot is taken. No socket, no thread.
#include <gtest/gtest.h>

#include <inlet/net/admission.hpp>

#include <memory>
#include <string>
#include <vector>

namespace d = inlet::net;
using d::admit_result;

namespace {

// A slot that records its wake-ups, at a chosen progress and phase.
struct test_slot : d::slot {
  int woken = 0;
  void wake() noexcept override { ++woken; }
  test_slot& at(d::clock::rep progress, phase p = phase::waiting) {
    this->progress = progress;
    state = p;
    return *this;
  }
};

d::admission_limits small() {
  d::admission_limits l;
  l.max_total = 8;
  l.max_per_ip = 100;
  l.max_per_subnet = 0;
  l.pressure_on = 6;
  l.pressure_off = 4;
  l.pressure_per_ip = 2;
  l.pressure_per_subnet = 100;
  return l;
}

struct pool {
  std::vector<std::unique_ptr<test_slot>> slots;
  test_slot& make() { return *slots.emplace_back(std::make_unique<test_slot>()); }
};

}  // namespace

TEST(Admission, SubnetsMaskTheAddress) {
  EXPECT_EQ(d::subnet_of("192.0.2.7", 24, 64), d::subnet_of("192.0.2.200", 24, 64));
  EXPECT_NE(d::subnet_of("192.0.2.7", 24, 64), d::subnet_of("192.0.3.7", 24, 64));
  EXPECT_EQ(d::subnet_of("192.0.2.7", 16, 64), d::subnet_of("192.0.3.7", 16, 64));
  EXPECT_NE(d::subnet_of("192.0.2.7", 32, 64), d::subnet_of("192.0.2.8", 32, 64));
  EXPECT_EQ(d::subnet_of("192.0.2.7", 20, 64), d::subnet_of("192.0.15.1", 20, 64));
  EXPECT_NE(d::subnet_of("192.0.2.7", 20, 64), d::subnet_of("192.0.16.1", 20, 64));
  EXPECT_EQ(d::subnet_of("2001:db8:1:2::1", 24, 64), d::subnet_of("2001:db8:1:2:ffff::9", 24, 64));
  EXPECT_NE(d::subnet_of("2001:db8:1:2::1", 24, 64), d::subnet_of("2001:db8:1:3::1", 24, 64));
  EXPECT_EQ(d::subnet_of("2001:db8:1:2::1", 24, 48), d::subnet_of("2001:db8:1:3::1", 24, 48));
  // An IPv4-mapped IPv6 address is the IPv4 client it maps.
  EXPECT_EQ(d::subnet_of("::ffff:192.0.2.7", 24, 64), d::subnet_of("192.0.2.99", 24, 64));
  EXPECT_NE(d::subnet_of("192.0.2.7", 24, 64), d::subnet_of("::c000:207", 24, 64));
  EXPECT_EQ(d::subnet_of("not an address", 24, 64), d::subnet_of("not an address", 24, 64));
}

TEST(Admission, HardLimitsPerIpAndPerSubnet) {
  d::admission_limits l = small();
  l.max_per_ip = 2;
  l.max_per_subnet = 3;
  d::admission adm(l);
  pool p;
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::admitted);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::admitted);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::over_ip);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.2"), admit_result::admitted);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.3"), admit_result::over_subnet);
  EXPECT_EQ(adm.admit(p.make(), "192.0.3.3"), admit_result::admitted);
  EXPECT_EQ(adm.active(), 4u);
  adm.release(*p.slots[0]);
  adm.release(*p.slots[0]);  // idempotent
  EXPECT_EQ(adm.active(), 3u);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.3"), admit_result::admitted);
}

// Pressure from pressure_on open connections until fewer than pressure_off;
// meanwhile an IP or subnet at its share is refused, and others are not.
TEST(Admission, PressureRefusesGroupsAtTheirShareWithHysteresis) {
  d::admission adm(small());
  pool p;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(d::admitted(adm.admit(p.make(), "192.0.2.1")));
  EXPECT_FALSE(adm.under_pressure());  // five from one IP: no pressure, no share
  ASSERT_TRUE(d::admitted(adm.admit(p.make(), "192.0.2.1")));
  EXPECT_TRUE(adm.under_pressure());
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::over_ip);
  EXPECT_EQ(adm.admit(p.make(), "192.0.3.1"), admit_result::admitted);
  EXPECT_EQ(adm.admit(p.make(), "192.0.3.1"), admit_result::admitted);
  EXPECT_EQ(adm.admit(p.make(), "192.0.3.1"), admit_result::over_ip);  // its share is 2
  adm.release(*p.slots[0]);
  adm.release(*p.slots[1]);
  adm.release(*p.slots[2]);  // 5 open: still above pressure_off
  EXPECT_TRUE(adm.under_pressure());
  adm.release(*p.slots[3]);  // 4 open: not below 4 yet
  EXPECT_TRUE(adm.under_pressure());
  adm.release(*p.slots[4]);  // 3 open
  EXPECT_FALSE(adm.under_pressure());
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::admitted);

  d::admission_limits l = small();
  l.pressure_per_subnet = 3;
  d::admission by_net(l);
  pool q;
  for (int i = 0; i < 6; ++i)
    ASSERT_TRUE(d::admitted(by_net.admit(q.make(), "192.0.2." + std::to_string(i + 1))));
  EXPECT_TRUE(by_net.under_pressure());
  EXPECT_EQ(by_net.admit(q.make(), "192.0.2.77"), admit_result::over_subnet);  // a new IP, same /24
  EXPECT_EQ(by_net.admit(q.make(), "198.51.100.1"), admit_result::admitted);
}

// Every slot taken: a client within its shares takes the slot of the slowest
// connection that waits for its client; busy ones are never taken, a group
// over its share loses first, the victim is woken once.
TEST(Admission, FullEvictsTheSlowestWaitingConnection) {
  d::admission_limits l = small();
  l.pressure_per_ip = 3;
  d::admission adm(l);
  pool p;
  // 192.0.2.1 holds four (over its share of 3: taken before the pressure
  // began), 198.51.100.x one each.
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(500), "192.0.2.1")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(400), "192.0.2.1")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(300, d::slot::phase::idle), "192.0.2.1")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(700), "192.0.2.1")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(100, d::slot::phase::busy), "198.51.100.1")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(200), "198.51.100.2")));
  ASSERT_TRUE(adm.under_pressure());
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(250), "198.51.100.3")));
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(600), "198.51.100.4")));
  ASSERT_EQ(adm.active(), 8u);
  EXPECT_EQ(adm.admit(p.make(), "192.0.2.1"), admit_result::over_ip);  // no eviction for it
  test_slot& newcomer = p.make();
  EXPECT_EQ(adm.admit(newcomer, "203.0.113.9"), admit_result::admitted_evicting);
  // Over-share group first, and in it the earliest progress: 300 (idle).
  EXPECT_EQ(p.slots[2]->woken, 1);
  EXPECT_TRUE(p.slots[2]->is_evicted());
  EXPECT_EQ(adm.evicted(), 1u);
  // The victim still counts until it closes; the next newcomer takes another.
  test_slot& second = p.make();
  EXPECT_EQ(adm.admit(second, "203.0.113.10"), admit_result::admitted_evicting);
  EXPECT_TRUE(p.slots[1]->is_evicted());  // 400: still over share (three left)
  adm.release(*p.slots[2]);
  adm.release(*p.slots[1]);
  // 192.0.2.1 is within its share now but still the heaviest source (2 of
  // 3, against 4 of 100 for 198.51.100.0/24): its slowest goes (500), not
  // the slowest overall (200).
  EXPECT_EQ(adm.admit(p.make(), "203.0.113.11"), admit_result::admitted_evicting);
  EXPECT_TRUE(p.slots[0]->is_evicted());
  EXPECT_FALSE(p.slots[5]->is_evicted());
  for (std::size_t i : {3u, 4u, 5u, 6u, 7u}) EXPECT_EQ(p.slots[i]->woken, 0) << i;
}

// The source holding the most slots against its shares loses first, counted
// per IP or per subnet, whichever is heavier; the slowest only decides within
// the heaviest group. Many addresses of one /24 with one connection each are
// one heavy source.
TEST(Admission, EvictionPrefersTheHeaviestSourceThenTheSlowest) {
  d::admission_limits l = small();
  l.pressure_per_ip = 2;
  l.pressure_per_subnet = 4;
  d::admission adm(l);
  pool p;
  // 192.0.2.0/24: five addresses, one connection each (5 of 4 per subnet).
  const int progress[] = {100, 200, 50, 300, 400};
  for (int i = 0; i < 5; ++i)
    ASSERT_TRUE(
        d::admitted(adm.admit(p.make().at(progress[i]), "192.0.2." + std::to_string(i + 1))));
  // 198.51.100.7: two (2 of 2 per IP), slower than any of the /24.
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(1), "198.51.100.7")));
  ASSERT_TRUE(adm.under_pressure());
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(2), "198.51.100.7")));
  // 203.0.113.1: one (1 of 2), the slowest of all.
  ASSERT_TRUE(d::admitted(adm.admit(p.make().at(0), "203.0.113.1")));
  ASSERT_EQ(adm.active(), 8u);

  EXPECT_EQ(adm.admit(p.make(), "233.252.0.1"), admit_result::admitted_evicting);
  EXPECT_TRUE(p.slots[2]->is_evicted());  // 192.0.2.3: the /24's slowest
  for (std::size_t i : {0u, 1u, 3u, 4u, 5u, 6u, 7u}) EXPECT_FALSE(p.slots[i]->is_evicted()) << i;
  adm.release(*p.slots[2]);

  // The /24 holds 4 of 4 now, 198.51.100.7 2 of 2: as heavy; the slower goes.
  EXPECT_EQ(adm.admit(p.make(), "233.252.0.2"), admit_result::admitted_evicting);
  EXPECT_TRUE(p.slots[5]->is_evicted());
  adm.release(*p.slots[5]);

  // 198.51.100.7 holds 1 of 2: the /24 is the heaviest again (4 of 4).
  EXPECT_EQ(adm.admit(p.make(), "233.252.0.3"), admit_result::admitted_evicting);
  EXPECT_TRUE(p.slots[0]->is_evicted());   // 192.0.2.1, at 100
  EXPECT_FALSE(p.slots[7]->is_evicted());  // 203.0.113.1, the slowest, last
}

TEST(Admission, FullWithNothingToEvictRefuses) {
  d::admission_limits l = small();
  d::admission adm(l);
  pool p;
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(d::admitted(
        adm.admit(p.make().at(i, d::slot::phase::busy), "198.51.100." + std::to_string(i))));
  EXPECT_EQ(adm.admit(p.make(), "203.0.113.1"), admit_result::full);
  p.slots[3]->state = d::slot::phase::idle;
  EXPECT_EQ(adm.admit(p.make(), "203.0.113.1"), admit_result::admitted_evicting);

  l.evict = false;
  d::admission off(l);
  pool q;
  for (int i = 0; i < 8; ++i)
    ASSERT_TRUE(d::admitted(off.admit(q.make().at(i), "198.51.100." + std::to_string(i))));
  EXPECT_EQ(off.admit(q.make(), "203.0.113.1"), admit_result::full);
}

// A slot destroyed while admitted gives its place back; a slot that outlives
// its admission is simply forgotten.
TEST(Admission, SlotLifetimes) {
  d::admission adm(small());
  {
    test_slot s;
    ASSERT_TRUE(d::admitted(adm.admit(s, "192.0.2.1")));
    EXPECT_EQ(adm.active(), 1u);
  }
  EXPECT_EQ(adm.active(), 0u);
  auto late = std::make_unique<test_slot>();
  {
    d::admission gone(small());
    ASSERT_TRUE(d::admitted(gone.admit(*late, "192.0.2.1")));
  }
  late.reset();  // no use of the destroyed admission
}
