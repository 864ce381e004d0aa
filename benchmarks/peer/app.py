"""The peer of benchmarks/run: a first-time purchase as an app team would write it without Berth.

A WSGI application (served by gunicorn) that answers `POST /api/verify-purchase` the way the
benchmark's Berth phase is called (a server key in Authorization, the user in X-User-Id, the body
`{productId, jwsRepresentation, bookingId}`): Apple's own app-store-server-library verifies the
StoreKit 2 signed transaction against the given root, the product is checked against the pending
booking, and the purchase is stored in SQLite under a unique transaction index, with the booking
confirmed in the same transaction. A transaction already applied to this booking answers as a
repeat; one applied elsewhere is refused (409).

    python3 app.py seed DATABASE REQUESTS.tsv   # the pending bookings the requests name
    PEER_DATABASE=… PEER_ROOT=root.pem PEER_KEY=… PEER_BUNDLE_ID=… gunicorn app:application
"""
import hmac
import json
import os
import sqlite3
import sys
import threading

SCHEMA = """
CREATE TABLE IF NOT EXISTS bookings (
    id INTEGER PRIMARY KEY, user_id TEXT NOT NULL, product_id TEXT NOT NULL, status TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS purchases (
    id INTEGER PRIMARY KEY, transaction_id TEXT NOT NULL, original_transaction_id TEXT NOT NULL,
    user_id TEXT NOT NULL, product_id TEXT NOT NULL, booking_id INTEGER NOT NULL, purchased_at INTEGER NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS purchases_transaction ON purchases (transaction_id);
"""


def connect(path):
    db = sqlite3.connect(path, isolation_level=None, timeout=30)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.executescript(SCHEMA)
    return db


def seed(path, requests):
    db = connect(path)
    db.execute("BEGIN")
    with open(requests) as lines:
        for line in lines:
            user, _, body = line.rstrip("\n").partition("\t")
            fields = json.loads(body)
            db.execute(
                "INSERT OR IGNORE INTO bookings (id, user_id, product_id, status) VALUES (?, ?, ?, 'pending_payment')",
                (fields["bookingId"], user, fields["productId"]),
            )
    db.execute("COMMIT")
    print(db.execute("SELECT COUNT(*) FROM bookings").fetchone()[0])


class Peer:
    def __init__(self):
        from cryptography import x509
        from cryptography.hazmat.primitives.serialization import Encoding
        from appstoreserverlibrary.models.Environment import Environment
        from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier

        with open(os.environ["PEER_ROOT"], "rb") as pem:
            root = x509.load_pem_x509_certificate(pem.read()).public_bytes(Encoding.DER)
        self.verifier = SignedDataVerifier([root], False, Environment.SANDBOX, os.environ["PEER_BUNDLE_ID"])
        self.key = os.environ["PEER_KEY"].encode()
        self.database = os.environ["PEER_DATABASE"]
        self.local = threading.local()  # one connection per worker thread, opened after the fork

    def answer(self, start_response, status, body):
        data = json.dumps(body).encode()
        start_response(status, [("Content-Type", "application/json"), ("Content-Length", str(len(data)))])
        return [data]

    def __call__(self, environ, start_response):
        if environ["PATH_INFO"] != "/api/verify-purchase" or environ["REQUEST_METHOD"] != "POST":
            return self.answer(start_response, "404 Not Found", {"error": "not_found"})
        given = environ.get("HTTP_AUTHORIZATION", "").removeprefix("Bearer ").encode()
        user = environ.get("HTTP_X_USER_ID", "")
        if not hmac.compare_digest(given, self.key) or not user:
            return self.answer(start_response, "401 Unauthorized", {"error": "unauthenticated"})
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            request = json.loads(environ["wsgi.input"].read(min(length, 64 * 1024)))
            product, jws, booking = request["productId"], request["jwsRepresentation"], int(request["bookingId"])
        except (ValueError, KeyError, TypeError):
            return self.answer(start_response, "400 Bad Request", {"error": "invalid_body"})
        try:
            transaction = self.verifier.verify_and_decode_signed_transaction(jws)
        except Exception as error:  # the library's VerificationException and malformed input alike
            return self.answer(start_response, "422 Unprocessable Entity", {"error": "invalid_transaction", "reason": str(error)})
        if transaction.productId != product:
            return self.answer(start_response, "422 Unprocessable Entity", {"error": "product_mismatch"})
        db = getattr(self.local, "db", None)
        if db is None:
            db = self.local.db = connect(self.database)
        db.execute("BEGIN IMMEDIATE")
        try:
            row = db.execute("SELECT product_id, status FROM bookings WHERE id = ? AND user_id = ?", (booking, user)).fetchone()
            if row is None:
                db.execute("ROLLBACK")
                return self.answer(start_response, "404 Not Found", {"error": "booking_not_found"})
            if row[0] != product:
                db.execute("ROLLBACK")
                return self.answer(start_response, "422 Unprocessable Entity", {"error": "product_mismatch"})
            applied = db.execute("SELECT booking_id FROM purchases WHERE transaction_id = ?", (transaction.transactionId,)).fetchone()
            if applied is not None:
                db.execute("ROLLBACK")
                if applied[0] == booking:
                    return self.answer(start_response, "200 OK", {"status": "confirmed", "bookingId": booking, "repeated": True})
                return self.answer(start_response, "409 Conflict", {"error": "transaction_already_used"})
            db.execute(
                "INSERT INTO purchases (transaction_id, original_transaction_id, user_id, product_id, booking_id, purchased_at) VALUES (?, ?, ?, ?, ?, ?)",
                (transaction.transactionId, transaction.originalTransactionId, user, product, booking, transaction.purchaseDate),
            )
            db.execute("UPDATE bookings SET status = 'confirmed' WHERE id = ?", (booking,))
            db.execute("COMMIT")
        except sqlite3.IntegrityError:
            db.execute("ROLLBACK")
            return self.answer(start_response, "409 Conflict", {"error": "transaction_already_used"})
        except Exception:
            db.execute("ROLLBACK")
            raise
        return self.answer(
            start_response, "200 OK", {"status": "confirmed", "bookingId": booking, "transactionId": transaction.transactionId}
        )


if __name__ == "__main__" and len(sys.argv) == 4 and sys.argv[1] == "seed":
    seed(sys.argv[2], sys.argv[3])
elif __name__ != "__main__":
    application = Peer()
