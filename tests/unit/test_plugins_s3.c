/* test_aws_s3.c — the S3 client's Signature Version 4 (plugins/aws/s3.c)
 * held to AWS's published example ("Signature Calculations for the
 * Authorization Header", Example: GET Object), and its URLs. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/aws/s3.h"

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void client(plg__s3 *c, const char *endpoint)
{
	core_err err = { 0 };

	setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", 1);
	unsetenv("AWS_SESSION_TOKEN");
	cr_assert_eq(plg__s3_init(c, endpoint, "us-east-1", "examplebucket", &err), 0,
		     "%s", err.msg);
}

Test(aws_s3, signs_aws_s_get_object_example)
{
	plg__s3 c;
	char auth[768];

	client(&c, NULL);
	cr_assert_eq(plg__s3_sign(&c, "GET", "/test.txt", "",
				  "host:examplebucket.s3.amazonaws.com\n"
				  "range:bytes=0-9\n"
				  "x-amz-content-sha256:" EMPTY_SHA "\n"
				  "x-amz-date:20130524T000000Z\n",
				  "host;range;x-amz-content-sha256;x-amz-date", EMPTY_SHA,
				  "20130524T000000Z", auth, sizeof(auth)), 0);
	cr_assert_str_eq(auth,
			 "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/"
			 "us-east-1/s3/aws4_request, SignedHeaders=host;range;"
			 "x-amz-content-sha256;x-amz-date, Signature="
			 "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	plg__s3_free(&c);
}

Test(aws_s3, signs_aws_s_put_object_example)
{
	/* Example: PUT Object (Welcome to Amazon S3., Date and a storage
	 * class header signed too) */
	plg__s3 c;
	char auth[768];

	client(&c, NULL);
	cr_assert_eq(plg__s3_sign(&c, "PUT", "/test%24file.text", "",
				  "date:Fri, 24 May 2013 00:00:00 GMT\n"
				  "host:examplebucket.s3.amazonaws.com\n"
				  "x-amz-content-sha256:44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072\n"
				  "x-amz-date:20130524T000000Z\n"
				  "x-amz-storage-class:REDUCED_REDUNDANCY\n",
				  "date;host;x-amz-content-sha256;x-amz-date;x-amz-storage-class",
				  "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072",
				  "20130524T000000Z", auth, sizeof(auth)), 0);
	cr_assert(strstr(auth, "Signature=98ad721746da40c64f1a55b78f14c238d841ea1380cd77a1b5971af0ece108bd"),
		  "%s", auth);
	plg__s3_free(&c);
}

Test(aws_s3, addresses_objects_path_or_virtual_hosted_style)
{
	plg__s3 c;
	char *u;

	client(&c, "http://127.0.0.1:7480/");
	u = plg__s3_url(&c, "in put/a+b.csv");
	cr_assert_str_eq(u, "http://127.0.0.1:7480/examplebucket/in%20put/a%2Bb.csv");
	free(u);
	plg__s3_free(&c);
	client(&c, NULL);
	u = plg__s3_url(&c, "x/y.csv");
	cr_assert_str_eq(u, "https://examplebucket.s3.us-east-1.amazonaws.com/x/y.csv");
	free(u);
	plg__s3_free(&c);
}

Test(aws_s3, one_credential_without_the_other_is_refused)
{
	plg__s3 c;
	core_err err = { 0 };

	setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
	unsetenv("AWS_SECRET_ACCESS_KEY");
	cr_assert_eq(plg__s3_init(&c, NULL, NULL, "bucket", &err), CORE_ECONFIG);
	cr_assert(strstr(err.msg, "must be set together"));
}

Test(aws_s3, bucket_region_and_endpoint_are_checked)
{
	/* a name that would move the request to another host, or break
	 * the signature, is refused before any request */
	cr_assert_null(plg__s3_bad_bucket("my-bucket.v2"));
	cr_assert_not_null(plg__s3_bad_bucket("evil.example/"));
	cr_assert_not_null(plg__s3_bad_bucket("evil.example#"));
	cr_assert_not_null(plg__s3_bad_bucket("Upper"));
	cr_assert_not_null(plg__s3_bad_bucket("ab"));
	cr_assert_not_null(plg__s3_bad_bucket("arn:aws:s3:us-east-1:123:accesspoint/x"));
	cr_assert_null(plg__s3_bad_region("eu-west-3"));
	cr_assert_not_null(plg__s3_bad_region("eu-west-3.evil.example/"));
	cr_assert_null(plg__s3_bad_endpoint("http://127.0.0.1:7480"));
	cr_assert_null(plg__s3_bad_endpoint("https://s3.example.com/"));
	cr_assert_not_null(plg__s3_bad_endpoint("http://h:9000/prefix"));
	cr_assert_not_null(plg__s3_bad_endpoint("http://user:pw@h"));
	cr_assert_not_null(plg__s3_bad_endpoint("http://h\r\nX: y"));
	cr_assert_not_null(plg__s3_bad_endpoint("ftp://h"));
	cr_assert_not_null(plg__s3_bad_endpoint("http://"));
}

Test(aws_s3, the_signed_host_is_the_one_sent)
{
	/* a default port is not in the Host header curl sends: nor in the
	 * signed one; a dotted bucket on AWS goes path-style */
	plg__s3 c;
	char *u;

	client(&c, "https://s3.example.com:443");
	u = plg__s3_url(&c, "k");
	cr_assert_str_eq(u, "https://s3.example.com:443/examplebucket/k");
	free(u);
	plg__s3_free(&c);
	setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE", 1);
	{
		core_err err = { 0 };

		cr_assert_eq(plg__s3_init(&c, NULL, "eu-west-3", "my.dotted.bucket", &err), 0,
			     "%s", err.msg);
	}
	u = plg__s3_url(&c, "a/b.csv");
	cr_assert_str_eq(u, "https://s3.eu-west-3.amazonaws.com/my.dotted.bucket/a/b.csv");
	free(u);
	plg__s3_free(&c);
}
