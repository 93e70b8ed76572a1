/* A small program to try layerprof on: decodes a made-up image row by row
 * in two threads.  Build with -finstrument-functions (see README.md). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WIDTH 320
#define HEIGHT 240

static unsigned char image[HEIGHT][WIDTH];

__attribute__((noinline)) static unsigned char decode_pixel(unsigned x, unsigned y)
{
	return (unsigned char)((x * 31u + y * 17u) ^ (x >> 3));
}

__attribute__((noinline)) static void put_pixel_rows(unsigned first, unsigned count)
{
	for (unsigned y = first; y < first + count; y++)
		for (unsigned x = 0; x < WIDTH; x++)
			image[y][x] = decode_pixel(x, y);
}

__attribute__((noinline)) static unsigned long checksum(void)
{
	unsigned long sum = 0;

	for (unsigned y = 0; y < HEIGHT; y++)
		for (unsigned x = 0; x < WIDTH; x++)
			sum += image[y][x];
	return sum;
}

static void *decoder_thread(void *arg)
{
	unsigned half = (unsigned)(size_t)arg;

	for (unsigned y = half * HEIGHT / 2; y < (half + 1) * HEIGHT / 2; y += 8)
		put_pixel_rows(y, 8);
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (size_t i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, decoder_thread, (void *)i);
	for (size_t i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("checksum %lu\n", checksum());
	return 0;
}
