// SPDX-License-Identifier: BSD-2-Clause
/*
 * A thread-per-connection blocking HTTP/1.1 server for tests/bench/programs.sh
 * (WHAT java-tpc): java.net.ServerSocket on 127.0.0.1:PORT, one platform
 * thread per accepted connection, blocking reads and writes.  Every request
 * (anything up to an empty line; no bodies) gets the same 64-byte answer, and
 * the connection stays open until the client closes it or sends
 * "Connection: close".
 *
 *   javac -d DIR TpcHttp.java && java -Djava.net.preferIPv4Stack=true -cp DIR TpcHttp PORT
 *   java -Djava.net.preferIPv4Stack=true TpcHttp.java PORT	(JDK 11+, compiles on start)
 *
 * Without preferIPv4Stack the JVM's sockets are AF_INET6 (127.0.0.1 as
 * ::ffff:127.0.0.1), which Sluice leaves to the kernel.
 */
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;

public final class TpcHttp {
	private static final byte[] BODY =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde\n"
			.getBytes(StandardCharsets.US_ASCII);
	private static final byte[] HEAD = ("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		+ "Content-Length: " + BODY.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII);
	private static final byte[] RESPONSE = new byte[HEAD.length + BODY.length];

	static {
		System.arraycopy(HEAD, 0, RESPONSE, 0, HEAD.length);
		System.arraycopy(BODY, 0, RESPONSE, HEAD.length, BODY.length);
	}

	private TpcHttp() {
	}

	/* Answer each complete request as it arrives, until the client is done. */
	private static void serve(Socket s) throws IOException {
		InputStream in = s.getInputStream();
		OutputStream out = s.getOutputStream();
		byte[] buf = new byte[16384];
		int have = 0;

		for (;;) {
			int n = in.read(buf, have, buf.length - have);

			if (n < 0)
				return;
			have += n;
			int start = 0, answered = 0;
			boolean close = false;

			for (int i = 3; i < have; i++) {
				if (buf[i] == '\n' && buf[i - 1] == '\r' && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
					String head = new String(buf, start, i + 1 - start, StandardCharsets.US_ASCII);

					close |= head.toLowerCase().contains("\r\nconnection: close");
					start = i + 1;
					answered++;
				}
			}
			for (int i = 0; i < answered; i++)
				out.write(RESPONSE);
			if (answered > 0)
				out.flush();
			if (close)
				return;
			if (start == 0 && have == buf.length)
				return;	/* a request larger than the buffer: give up */
			System.arraycopy(buf, start, buf, 0, have - start);
			have -= start;
		}
	}

	public static void main(String[] args) throws IOException {
		int port = Integer.parseInt(args[0]);
		ServerSocket l = new ServerSocket();

		l.setReuseAddress(true);
		l.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), port), 1024);
		System.out.println("listening " + l.getLocalSocketAddress());
		for (;;) {
			Socket s = l.accept();
			Thread t = new Thread(() -> {
				try (s) {
					s.setTcpNoDelay(true);
					serve(s);
				} catch (IOException e) {
					/* the client went away */
				}
			});

			t.setDaemon(true);
			t.start();
		}
	}
}
