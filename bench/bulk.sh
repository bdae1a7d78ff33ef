# Sourced by the bench scripts that send or write bulk RDMA traffic (generate.sh,
# send-vs-tcpreplay.sh, live-capture.sh): `bulk_scenario FILE MESSAGES` writes the one scenario
# they share, an RC connection of MESSAGES 1 MiB WRITEs with a 1 KiB PMTU (1,040 frames of
# 1,086 bytes a message), so that their figures are about the same frames.
bulk_scenario() {
  cat >"$1" <<TOML
[link]
speed_gbps = 400
stop_ns = 3600000000000
max_frames = 100000000
[[host]]
name = "a"
mac = "02:00:00:00:00:01"
ip = "10.0.0.1"
[[host]]
name = "b"
mac = "02:00:00:00:00:02"
ip = "10.0.0.2"
[[connection]]
name = "c"
transport = "rc"
requester = "a"
responder = "b"
requester_qpn = 17
responder_qpn = 18
pmtu = 1024
[[traffic]]
connection = "c"
op = "write"
size = 1048576
messages = $2
TOML
}
