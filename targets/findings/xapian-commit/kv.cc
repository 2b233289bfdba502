// kv.cc -- Xapian as a key-value store, for torture --target exec and for
// the standalone reproducer: each put replaces the document of term "Qk<N>"
// with value "v<I>" and calls commit(); the put is acknowledged once
// commit() returned ("changes are durable when commit() returns",
// xapian/constants.h, DB_NO_SYNC's comment; docs: WritableDatabase::commit).
//
//   kv DIR [N]            N puts (default 100000); speaks the kit's
//                         protocol on $KEEL_TORTURE_FD when it is set, else
//                         prints "acked k<K> v<I>" for each put
//   kv DIR --check        prints "k<K> v<I>" for each key in the database
#include <xapian.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>

static void say(int fd, const std::string &line)
{
	if (fd < 0) {
		fputs(line.c_str(), stdout);
		fflush(stdout);
		return;
	}
	if (write(fd, line.data(), line.size()) != (ssize_t)line.size())
		exit(3);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: kv DIR [N|--check]\n");
		return 2;
	}
	const char *dir = argv[1];
	try {
		if (argc > 2 && !strcmp(argv[2], "--check")) {
			std::string version = std::string(dir) + "/iamglass";
			if (access(version.c_str(), F_OK) != 0)
				return 0; /* no database (yet): no keys */
			Xapian::Database db(dir);
			for (Xapian::TermIterator t = db.allterms_begin("Q");
			     t != db.allterms_end("Q"); ++t) {
				Xapian::PostingIterator p = db.postlist_begin(*t);
				if (p == db.postlist_end(*t))
					continue;
				Xapian::Document d = db.get_document(*p);
				printf("%s %s\n", (*t).substr(1).c_str(),
				       d.get_data().c_str());
			}
			return 0;
		}
		long n = argc > 2 ? atol(argv[2]) : 100000;
		const char *e = getenv("KEEL_TORTURE_FD");
		int fd = e ? atoi(e) : -1;
		Xapian::WritableDatabase db(dir, Xapian::DB_CREATE_OR_OPEN);
		srand(getpid());
		for (long i = 1; i <= n; i++) {
			std::string k = "k" + std::to_string(rand() % 8);
			std::string v = "v" + std::to_string(i) + "." +
			                std::to_string(getpid());
			if (fd >= 0)
				say(fd, "intent " + std::to_string(i) + " " + k +
				            " " + v + "\n");
			Xapian::Document d;
			d.set_data(v);
			d.add_boolean_term("Q" + k);
			db.replace_document("Q" + k, d);
			db.commit();
			say(fd, fd >= 0 ? "ack " + std::to_string(i) + "\n"
			                : "acked " + k + " " + v + "\n");
		}
	} catch (const Xapian::Error &err) {
		fprintf(stderr, "kv: %s\n", err.get_description().c_str());
		return 1;
	}
	return 0;
}
