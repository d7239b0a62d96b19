/* main.c — placeholder until the CLI lands. */
int main(void)
{
	return 0;
}
