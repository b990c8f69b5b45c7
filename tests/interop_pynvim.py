"""interop_pynvim.py - a third-party msgpack-RPC client against foliod.

Run by tests/e2e_interop.c with the server's TCP address and its admin
socket: python3 interop_pynvim.py HOST:PORT ADMIN_SOCKET.  It uses
pynvim's msgpack_rpc sessions (python3-pynvim), Neovim's own Python
client, which packs method names given as bytes as bin (msgpack's old
"raw") and opens every session with the notification
[2, <bin "nvim_set_client_info">, [...]].  Prints "ok" and exits 0 when
every answer is right; any failure is an exception (exit 1).
"""
import sys

from pynvim.msgpack_rpc import ErrorResponse, socket_session, tcp_session


class FolioError(ErrorResponse):
    """An error reply [code, message]: pynvim shows the message (as its
    Nvim class does, error[1]); the code is kept to be checked."""

    def __init__(self, error):
        super().__init__(error[1])
        self.code = error[0]


def session(s):
    s.error_wrapper = FolioError
    return s


def expect_error(s, method, *args, code, message):
    try:
        s.request(method, *args)
    except FolioError as e:
        text = str(e)
        assert e.code == code, (method, e.code, code, text)
        assert message in text, text
        return text
    raise AssertionError("%r answered, an error was expected" % (method,))


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    admin_path = sys.argv[2]

    # The session has sent its bin-named notification already.
    s = session(tcp_session(host, int(port)))
    # bin and str method names alike.
    assert s.request(b"server.ping") == "pong"
    assert s.request("server.ping") == "pong"
    methods = s.request(b"server.methods")
    assert methods["server.ping"] == '-> "pong"', methods
    # Params and results of every type the comments service uses.
    posted = s.request(b"comments.post",
                       {"path": "blog/pynvim", "author": "nvim",
                        "body": "Hello from\n\tpynvim"})
    assert posted["path"] == "/blog/pynvim/", posted
    assert posted["body"] == "Hello from\n\tpynvim", posted
    listed = s.request(b"comments.list", "/blog/pynvim/")
    assert [c["id"] for c in listed] == [posted["id"]], listed
    # Errors: [code, message], pynvim shows the message.
    # Codes of folio-rpc(7): 12 UNIMPLEMENTED, 3 INVALID_ARGUMENT, 7
    # PERMISSION_DENIED.
    expect_error(s, b"no.such", code=12, message="unknown method 'no.such'")
    expect_error(s, b"server.ping", 1, code=3,
                 message="server.ping takes 0 params")
    expect_error(s, b"server.stats", code=7, message="admin socket only")
    # Notifications, bin and str, known and unknown: never answered, and
    # the connection goes on.
    s.request(b"nvim_command", "echo 1", async_=True)
    s.request("no.such.either", async_=True)
    s.request(b"server.ping", async_=True)
    assert s.request(b"server.ping") == "pong"
    s.close()

    # The admin socket over a Unix socket session.
    a = session(socket_session(admin_path))
    totals = a.request(b"server.stats")["totals"]
    # nvim_set_client_info twice (one per session) and the three above.
    assert totals["notifications"] == 5, totals
    assert totals["protocol_errors"] == 0, totals
    a.close()
    print("ok")


if __name__ == "__main__":
    main()
