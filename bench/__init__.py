"""diffill.bench: completion quality (`diffill eval`) and speed figures (`diffill bench ...`), the raw LSP wire
client the reliability tests drive the daemon with, and the device scripts (bench/*.sh). On top of every other
package; nothing imports it."""
